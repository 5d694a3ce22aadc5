// The end both GELU matchers (erf_gelu.cc, tanh_gelu.cc) share: from the gate, 1 + erf(.) or
// 1 + tanh(.), on to the fused node's output.

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
  if (*other == x) {
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
  }
  return tail;
}

}  // namespace memplan
