// hard_swish: nn.Hardswish as torch.onnx writes it below opset 14:  y = x * HardSigmoid(x) with
// HardSigmoid's alpha = 1/6 and beta = 0.5 (torch's hardsigmoid: relu6(x + 3) / 6).
//
// Autograd's hardswish keeps only its input (hardswish_backward(grad, self)); read node by node,
// HardSigmoid keeps x and the Mul keeps x and hardsigmoid(x): one extra activation-sized tensor.
// Fused into HardSwish (opset 14), whose definition is exactly this product.
//
// Look-alikes left alone: other alpha/beta (ONNX's HardSigmoid defaults are 0.2 and 0.5), a
// HardSigmoid gate multiplying another tensor (MobileNetV3's squeeze-and-excitation).

#include "graph/fusion/patterns.h"

namespace memplan {
namespace {

bool IsTorchHardSigmoid(const onnx::NodeProto& n) {
  double alpha = 0.2;  // ONNX defaults
  double beta = 0.5;
  for (const auto& a : n.attribute()) {
    if (a.name() == "alpha") alpha = a.f();
    if (a.name() == "beta") beta = a.f();
  }
  return Near(alpha, 1.0 / 6.0) && Near(beta, 0.5);
}

}  // namespace

std::optional<FusionMatch> MatchHardSwish(const ProtoIndex& index, int hard_sigmoid) {
  const auto& h = index.node(hard_sigmoid);
  if (!IsOp(h, "HardSigmoid", 1) || !IsTorchHardSigmoid(h)) return std::nullopt;
  return MatchSelfGatedProduct(index, hard_sigmoid, "HardSwish");
}

}  // namespace memplan
