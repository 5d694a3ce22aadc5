// swiglu: a LLaMA-style MLP's gate, F.silu(gate_proj(x)) * up_proj(x), after the silu entry made
// its Sigmoid, Mul a Swish: Mul(Swish(a), b) becomes memplan:SwiGlu(a, b)
// (graph/ops/swiglu_op.h), as Liger Kernel's LigerSiLUMulFunction runs it (HF's
// use_liger_kernel=True, apply_liger_kernel_to_llama/mistral/qwen2/phi3's swiglu=True). Applied
// only under FusionSet::kLiger: eager autograd keeps silu(a) for the Mul, Liger does not.
//
// The Swish must have alpha 1 (SiLU) and feed only the Mul; the Mul's other operand is b, whichever
// side it is on. a * silu(a) (the same tensor twice) is SiLU squared, not a gate, and is left.

#include "graph/fusion/patterns.h"
#include "graph/ops/swiglu_op.h"

namespace memplan {

std::optional<FusionMatch> MatchSwiGlu(const ProtoIndex& index, int swish_node) {
  const auto& swish = index.node(swish_node);
  if (!IsOp(swish, "Swish", 1)) return std::nullopt;
  for (const auto& a : swish.attribute())
    if (a.name() == "alpha" && a.f() != 1.0f) return std::nullopt;
  const std::string& gate = swish.output(0);
  auto mul = SoleConsumerOp(index, gate, "Mul", 2);
  if (!mul) return std::nullopt;
  const std::optional<std::string> up = OtherOperand(index.node(*mul), gate);
  if (!up || *up == gate || *up == swish.input(0)) return std::nullopt;
  FusionMatch m;
  m.nodes = {swish_node, *mul};
  m.last = *mul;
  m.fused = FusedNode(swiglu::kOpType, swiglu::kDomain, {swish.input(0), *up},
                      index.node(*mul).output(0));
  return m;
}

}  // namespace memplan
