// rsqrt: torch.rsqrt(v), which torch.onnx writes as Div(ones(1), Sqrt(v)) (there is no ONNX
// Rsqrt). Fused into memplan:Rsqrt (graph/ops/elementwise_ops.cc).
//
// Autograd's rsqrt keeps only its result (-0.5 * grad * result^3); read node by node, Sqrt keeps
// its result and the Div keeps the divisor, that same tensor, while whatever multiplies by the
// Div's output (LLaMA's written-out RMSNorm: x * rsqrt(mean(x^2) + eps)) keeps that output too:
// two tensors where autograd has one. The shape stays the Div's: the fused node's
// `broadcast_rank` is the rank of the one (0 or 1), which only a rank-0 v feels ([] -> [1]).
//
// Look-alikes left alone: a Sqrt read elsewhere too (its result is then needed anyway), a
// numerator other than exactly 1, a one of more than one element or held in an initializer (a
// parameter that trains), a Div by something else.

#include "graph/fusion/patterns.h"
#include "graph/ops/rsqrt_op.h"

namespace memplan {

std::optional<FusionMatch> MatchRsqrt(const ProtoIndex& index, int sqrt_node) {
  const auto& sqrt = index.node(sqrt_node);
  if (!IsOp(sqrt, "Sqrt", 1)) return std::nullopt;
  const std::string& root = sqrt.output(0);
  auto div = SoleConsumerOp(index, root, "Div", 2);
  if (!div) return std::nullopt;
  const auto& d = index.node(*div);
  if (d.input(1) != root || d.input(0) == root) return std::nullopt;
  const std::string& one = d.input(0);
  if (index.Initializer(one) != nullptr) return std::nullopt;
  const std::optional<int> one_rank = index.ConstantRank(one);
  if (!one_rank || *one_rank > 1 || !Near(index.Scalar(one), 1.0)) return std::nullopt;
  FusionMatch m;
  m.nodes = {sqrt_node, *div};
  m.last = *div;
  m.fused = FusedNode(rsqrt::kOpType, rsqrt::kDomain, {sqrt.input(0)}, d.output(0));
  SetIntAttribute(m.fused, rsqrt::kBroadcastRank, *one_rank);
  return m;
}

}  // namespace memplan
