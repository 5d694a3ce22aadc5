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
  if (!IsOp(index.node(sigmoid), "Sigmoid", 1)) return std::nullopt;
  auto m = MatchSelfGatedProduct(index, sigmoid, "Swish");
  if (!m) return std::nullopt;
  SetFloatAttribute(m->fused, "alpha", 1.0f);
  return m;
}

}  // namespace memplan
