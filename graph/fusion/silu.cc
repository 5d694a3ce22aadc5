// silu: nn.SiLU / F.silu as exporters write it below opset 24:  y = x * Sigmoid(x)  (Sigmoid, Mul).
//
// Autograd's silu keeps only its input (silu_backward(grad, self)); the two nodes read one by one
// keep Sigmoid's output (sigmoid_backward) and both Mul operands: x and sigmoid(x), one extra
// activation-sized tensor per activation (EfficientNet's every conv). Fused into Swish (opset 24,
// alpha = 1: x * sigmoid(1 * x)).
//
// Look-alikes left alone: a Sigmoid gate multiplying another tensor (squeeze-and-excitation,
// SwiGLU's gate times up-projection), a sigmoid read elsewhere too.

#include "graph/fusion/patterns.h"

namespace memplan {

std::optional<FusionMatch> MatchSilu(const ProtoIndex& index, int sigmoid) {
  const auto& s = index.node(sigmoid);
  if (!IsOp(s, "Sigmoid", 1)) return std::nullopt;
  const std::string& x = s.input(0);
  auto mul = SoleConsumerOp(index, s.output(0), "Mul", 2);
  if (!mul || OtherOperand(index.node(*mul), s.output(0)) != x) return std::nullopt;
  FusionMatch m;
  m.nodes = {sigmoid, *mul};
  m.last = *mul;
  m.fused = FusedNode("Swish", "", {x}, index.node(*mul).output(0));
  SetFloatAttribute(m.fused, "alpha", 1.0f);
  return m;
}

}  // namespace memplan
