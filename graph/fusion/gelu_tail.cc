// The end both GELU matchers (erf_gelu.cc, tanh_gelu.cc) share: from the gate, 1 + erf(.) or
// 1 + tanh(.), on to the fused node's output. The 0.5 comes last ((x * gate) * 0.5, torch.onnx's
// TorchScript exporter), first on x ((x * 0.5) * gate) or first on the gate (x * (0.5 * gate),
// torch.onnx's dynamo exporter at opset 18).

#include "graph/fusion/patterns.h"

namespace memplan {

std::optional<GeluTail> MatchGeluTail(const ProtoIndex& index, const std::string& gate,
                                      const std::string& x) {
  auto times = SoleConsumerOp(index, gate, "Mul", 2);
  if (!times) return std::nullopt;
  const auto other = OtherOperand(index.node(*times), gate);
  if (!other) return std::nullopt;
  GeluTail tail;
  tail.nodes.push_back(*times);
  if (OtherThanScalar(index.node(*times), index, 0.5, true) == gate) {
    // x * (0.5 * gate): the halved gate feeds only the Mul by x.
    const std::string& half_gate = index.node(*times).output(0);
    auto outer = SoleConsumerOp(index, half_gate, "Mul", 2);
    if (!outer || OtherOperand(index.node(*outer), half_gate) != x) return std::nullopt;
    tail.nodes.push_back(*outer);
    tail.last = *outer;
    tail.half = GeluHalf::kOnGate;
  } else if (*other == x) {
    // (x * gate) * 0.5
    const std::string& product = index.node(*times).output(0);
    auto half = SoleConsumerOp(index, product, "Mul", 2);
    if (!half || OtherThanScalar(index.node(*half), index, 0.5, true) != product)
      return std::nullopt;
    tail.nodes.push_back(*half);
    tail.last = *half;
  } else {
    // (x * 0.5) * gate: the half product must be x * 0.5 and feed only this Mul.
    auto half = index.Producer(*other);
    if (!half || !index.SoleConsumer(*other) || !IsOp(index.node(*half), "Mul", 2) ||
        OtherThanScalar(index.node(*half), index, 0.5, true) != x)
      return std::nullopt;
    tail.nodes.push_back(*half);
    tail.last = *times;
    tail.half = GeluHalf::kOnX;
  }
  return tail;
}

}  // namespace memplan
