// The shape SiLU (silu.cc) and Hardswish (hard_swish.cc) share as exporters write them: x times a
// gate computed from x alone, y = x * gate(x), the gate read only by that Mul.

#include "graph/fusion/patterns.h"

namespace memplan {

std::optional<FusionMatch> MatchSelfGatedProduct(const ProtoIndex& index, int gate,
                                                 const std::string& fused_op_type) {
  const auto& g = index.node(gate);
  const std::string& x = g.input(0);
  auto mul = SoleConsumerOp(index, g.output(0), "Mul", 2);
  if (!mul || OtherOperand(index.node(*mul), g.output(0)) != x) return std::nullopt;
  FusionMatch m;
  m.nodes = {gate, *mul};
  m.last = *mul;
  m.fused = FusedNode(fused_op_type, "", {x}, index.node(*mul).output(0));
  return m;
}

}  // namespace memplan
