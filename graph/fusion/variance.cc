// variance: torch.var / var_mean / std as exporters write them (torch.onnx _var_mean_helper,
// onnxscript _aten_var_mean_dim_onnx; BiT's weight standardisation, torch.var_mean(w, [1, 2, 3])):
//   m = ReduceMean(x, axes, keepdims=1); d = Sub(x, m); v = ReduceMean(Mul(d, d), axes)
// Fused into memplan:Variance (graph/ops/variance_op.h), planned as var (self kept). Read node by
// node the square keeps d, an input-sized copy torch's var_backward never makes (torch 2.x,
// saved_tensors_hooks on x [2, 8, 16] fp32: x.var(2) keeps 1024 bytes, x itself).
//
// variance_formula: the same with Pow(d, 2), which is what ((x - x.mean(.., keepdim=True))**2)
// .mean(..) written by hand exports; eager autograd runs that op by op and keeps d (pow's self),
// as the unfused chain is planned. Applied only under FusionSet::kAll, like rms_norm. An unbiased
// correction is a Mul and a Div by constants after v, left as they are (they keep nothing); std
// is a Sqrt after it, whose result is what std_backward keeps beside self.
//
// Exact only when d feeds only the square (a LayerNorm written out divides by d as well: it is
// layer_norm's, and then d is needed anyway), both means reduce the same constant axes, and the
// first keeps its dims (or reduces every axis: dim=None writes a keepdims=0 mean that broadcasts).
// The first mean is part of the match only when the Sub is its one reader; otherwise it stays
// for its other readers and the fused node reads x alone.

#include <algorithm>

#include "graph/fusion/patterns.h"
#include "graph/ops/variance_op.h"

namespace memplan {

namespace {

std::optional<FusionMatch> MatchVarianceWith(const ProtoIndex& index, int mean_node, bool pow) {
  const auto& mean = index.node(mean_node);
  auto first = ReductionOf(index, mean, "ReduceMean");
  if (!first || (!first->keepdims && !first->axes.empty())) return std::nullopt;
  const std::string& x = mean.input(0);
  std::optional<int> sub;
  for (int c : index.Consumers(mean.output(0))) {
    const auto& n = index.node(c);
    if (IsOp(n, "Sub", 2) && n.input(0) == x && n.input(1) == mean.output(0)) sub = c;
  }
  if (!sub) return std::nullopt;
  const std::string& d = index.node(*sub).output(0);
  if (index.IsGraphOutput(d)) return std::nullopt;
  // One reader, the square (Consumers lists Mul(d, d) once per slot).
  const auto& readers = index.Consumers(d);
  if (readers.empty() ||
      std::any_of(readers.begin(), readers.end(), [&](int r) { return r != readers[0]; }))
    return std::nullopt;
  const auto& sq = index.node(readers[0]);
  const bool square =
      pow ? IsOp(sq, "Pow", 2) && sq.input(0) == d && Near(index.Scalar(sq.input(1)), 2.0)
          : IsOp(sq, "Mul", 2) && sq.input(0) == d && sq.input(1) == d;
  if (!square) return std::nullopt;
  auto second_node = index.SoleConsumer(sq.output(0));
  if (!second_node) return std::nullopt;
  const auto& second_mean = index.node(*second_node);
  auto second = ReductionOf(index, second_mean, "ReduceMean");
  if (!second || second->axes != first->axes) return std::nullopt;

  FusionMatch m;
  m.nodes = {*sub, readers[0], *second_node};
  const bool mean_only_for_sub =
      index.SoleConsumer(mean.output(0)) == sub && !index.IsGraphOutput(mean.output(0));
  if (mean_only_for_sub) m.nodes.push_back(mean_node);
  m.last = *second_node;
  m.fused = FusedNode(variance::kOpType, variance::kDomain, {x}, second_mean.output(0));
  if (!first->axes.empty()) SetIntsAttribute(m.fused, "axes", first->axes);
  SetIntAttribute(m.fused, "keepdims", second->keepdims ? 1 : 0);
  return m;
}

}  // namespace

std::optional<FusionMatch> MatchVariance(const ProtoIndex& index, int mean_node) {
  return MatchVarianceWith(index, mean_node, /*pow=*/false);
}

std::optional<FusionMatch> MatchVarianceFormula(const ProtoIndex& index, int mean_node) {
  return MatchVarianceWith(index, mean_node, /*pow=*/true);
}

}  // namespace memplan
