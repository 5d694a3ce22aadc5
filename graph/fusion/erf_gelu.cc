// erf_gelu: the exact GELU that exporters write below opset 20 (torch.onnx for nn.GELU / F.gelu,
// and memplan's zoo):  y = (x * (1 + erf(x / sqrt(2)))) * 0.5  as Div, Erf, Add, Mul, Mul.
//
// Autograd saves one tensor for F.gelu (its input: gelu_backward(grad, self, "none")); the chain
// read node by node saves x / sqrt(2) (for Erf) and 1 + erf (for the Mul) on top of x, two extra
// activation-sized tensors per MLP. The fused node is com.microsoft's Gelu (ONNX Runtime's contrib
// op; the same op as opset-20 Gelu, graph/ops/standard_aliases.h).
//
// Matched variants: x / c or x * (1 / c) with c = sqrt(2); 1 + erf in either operand order; the
// 0.5 applied last (to x * (1 + erf), the TorchScript exporter's symbolic_opset9.gelu) or first
// to 1 + erf (the dynamo exporter's x * (0.5 * (1 + erf(x / c))), onnxscript torch_lib
// _aten_gelu_approximate_none; gelu_tail.cc).
//
// erf_gelu_formula: the same GELU written by hand with the half applied to x first,
// x * 0.5 * (1.0 + torch.erf(x / math.sqrt(2.0))) (ESM's gelu, transformers' GELUActivation with
// use_gelu_python), traced as Mul(x, 0.5), Mul(., 1 + erf). Neither exporter writes F.gelu in
// that order. Eager autograd runs it op by op (derivatives.yaml: a Mul or Div by a Python scalar
// saves nothing, erf saves its input, a Mul of two tensors saves both), keeping x / sqrt(2),
// x * 0.5 and 1 + erf: three activation-sized tensors against F.gelu's one (torch 2.15, ESM: 3 x
// 8,192 B per MLP). So that form is fused only under FusionSet::kAll (a compiled or fused-kernel
// run), as tanh_gelu_formula.

#include <cmath>

#include "graph/fusion/patterns.h"

namespace memplan {

namespace {

// Which halves a form accepts: the exporters' (last, on the gate) or a hand-written formula's (on
// x first).
enum class Half { kExporters, kOnX };

std::optional<FusionMatch> MatchErfGeluForm(const ProtoIndex& index, int erf, Half accepted) {
  const auto& e = index.node(erf);
  if (!IsOp(e, "Erf", 1)) return std::nullopt;
  // x / sqrt(2) or x * (1 / sqrt(2)), feeding only the Erf.
  auto scale_node = index.Producer(e.input(0));
  if (!scale_node || !index.SoleConsumer(e.input(0))) return std::nullopt;
  const auto& s = index.node(*scale_node);
  std::optional<std::string> x;
  if (IsOp(s, "Div", 2)) x = OtherThanScalar(s, index, std::sqrt(2.0), /*commutative=*/false);
  if (IsOp(s, "Mul", 2)) x = OtherThanScalar(s, index, 1.0 / std::sqrt(2.0), /*commutative=*/true);
  if (!x) return std::nullopt;
  // 1 + erf.
  auto add = SoleConsumerOp(index, e.output(0), "Add", 2);
  if (!add || OtherThanScalar(index.node(*add), index, 1.0, true) != e.output(0))
    return std::nullopt;
  auto tail = MatchGeluTail(index, index.node(*add).output(0), *x);
  if (!tail || (tail->half == GeluHalf::kOnX) != (accepted == Half::kOnX)) return std::nullopt;

  FusionMatch m;
  m.nodes = {*scale_node, erf, *add};
  m.nodes.insert(m.nodes.end(), tail->nodes.begin(), tail->nodes.end());
  m.last = tail->last;
  m.fused = FusedNode("Gelu", "com.microsoft", {*x}, index.node(m.last).output(0));
  return m;
}

}  // namespace

std::optional<FusionMatch> MatchErfGelu(const ProtoIndex& index, int erf) {
  return MatchErfGeluForm(index, erf, Half::kExporters);
}

std::optional<FusionMatch> MatchErfGeluFormula(const ProtoIndex& index, int erf) {
  return MatchErfGeluForm(index, erf, Half::kOnX);
}

}  // namespace memplan
