// layer_norm: nn.LayerNorm / F.layer_norm as torch.onnx writes it below opset 17 (checked on torch
// 1.13, symbolic_opset9.layer_norm):
//   m = ReduceMean(x, axes=[-k..-1]); d = Sub(x, m); v = ReduceMean(Pow(d, 2), same axes);
//   y = Div(d, Sqrt(Add(v, eps))) * gamma [+ beta]
// native_layer_norm keeps x, gamma, beta, mean and rstd (the statistics are rows x 4 bytes); the
// chain read node by node keeps d (for Pow and Div), the normalised tensor (for Mul) and the
// statistics: one extra activation-sized tensor per LayerNorm, plus x where nothing else keeps it.
// Fused into LayerNormalization (opset 17) with axis = -k and epsilon = eps.
//
// Exact only when: both reductions are over the same trailing axes with keepdims = 1 (axes as an
// attribute, or as the constant input of opset 18); the square is Pow(d, 2) or Mul(d, d); d feeds
// only the square and the Div; gamma (and beta, when the Add follows) are initializers of rank <=
// k, so they broadcast within the normalised axes as LayerNormalization's Scale and B do. Without a
// gamma (elementwise_affine=False) the chain is left as it is: LayerNormalization needs a Scale.

#include "graph/fusion/patterns.h"

namespace memplan {
namespace {

// For Mul/Add(value, w) in either order with `w` a small-rank initializer: w.
std::optional<std::string> AffineOperand(const ProtoIndex& index, const onnx::NodeProto& n,
                                         const std::string& value, int max_rank) {
  auto w = OtherOperand(n, value);
  if (!w || *w == value || !IsSmallRankWeight(index, *w, max_rank)) return std::nullopt;
  return w;
}

// The square of `d` in `d`'s consumers: Pow(d, 2) or Mul(d, d).
bool IsSquareOf(const ProtoIndex& index, const onnx::NodeProto& n, const std::string& d) {
  if (IsOp(n, "Pow", 2)) return n.input(0) == d && Near(index.Scalar(n.input(1)), 2.0);
  return IsOp(n, "Mul", 2) && n.input(0) == d && n.input(1) == d;
}

}  // namespace

std::optional<FusionMatch> MatchLayerNorm(const ProtoIndex& index, int mean_node) {
  const auto& mean = index.node(mean_node);
  auto k = TrailingReduceMeanAxes(index, mean);
  if (!k) return std::nullopt;
  const std::string& x = mean.input(0);
  auto sub = SoleConsumerOp(index, mean.output(0), "Sub", 2);
  if (!sub || index.node(*sub).input(0) != x || index.node(*sub).input(1) != mean.output(0))
    return std::nullopt;
  const std::string& d = index.node(*sub).output(0);
  // d feeds the square (once, or twice for Mul(d, d)) and the Div, nothing else.
  if (index.IsGraphOutput(d)) return std::nullopt;
  std::optional<int> square, div;
  for (int c : index.Consumers(d)) {
    const auto& n = index.node(c);
    if (IsSquareOf(index, n, d) && (!square || *square == c)) {
      square = c;
    } else if (IsOp(n, "Div", 2) && n.input(0) == d && n.input(1) != d && !div) {
      div = c;
    } else {
      return std::nullopt;
    }
  }
  if (!square || !div) return std::nullopt;
  auto variance = index.SoleConsumer(index.node(*square).output(0));
  if (!variance || TrailingReduceMeanAxes(index, index.node(*variance)) != k) return std::nullopt;
  auto add_eps = SoleConsumerOp(index, index.node(*variance).output(0), "Add", 2);
  if (!add_eps) return std::nullopt;
  const auto& a = index.node(*add_eps);
  auto eps_name = OtherOperand(a, index.node(*variance).output(0));
  auto eps = eps_name ? index.Scalar(*eps_name) : std::nullopt;
  if (!eps || *eps < 0) return std::nullopt;
  auto sqrt = SoleConsumerOp(index, a.output(0), "Sqrt", 1);
  if (!sqrt || index.node(*div).input(1) != index.node(*sqrt).output(0) ||
      index.SoleConsumer(index.node(*sqrt).output(0)) != div)
    return std::nullopt;
  const std::string& normalized = index.node(*div).output(0);
  auto scale_node = SoleConsumerOp(index, normalized, "Mul", 2);
  if (!scale_node) return std::nullopt;
  auto gamma = AffineOperand(index, index.node(*scale_node), normalized, *k);
  if (!gamma) return std::nullopt;

  FusionMatch m;
  m.nodes = {mean_node, *sub, *square, *variance, *add_eps, *sqrt, *div, *scale_node};
  m.last = *scale_node;
  std::optional<std::string> beta;
  const std::string& scaled = index.node(*scale_node).output(0);
  if (auto bias_node = SoleConsumerOp(index, scaled, "Add", 2)) {
    beta = AffineOperand(index, index.node(*bias_node), scaled, *k);
    if (beta) {
      m.nodes.push_back(*bias_node);
      m.last = *bias_node;
    }
  }
  const std::string& y = index.node(m.last).output(0);
  m.fused = beta ? FusedNode("LayerNormalization", "", {x, *gamma, *beta}, y)
                 : FusedNode("LayerNormalization", "", {x, *gamma}, y);
  SetIntAttribute(m.fused, "axis", -*k);
  SetFloatAttribute(m.fused, "epsilon", static_cast<float>(*eps));
  return m;
}

}  // namespace memplan
