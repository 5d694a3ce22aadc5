// glu: F.glu(x, dim) / nn.GLU (Conformer's convolution module, gated convolutions), as torch.onnx
// (symbolic_opset9.glu) and onnxscript (aten_glu) write it: a, b = Split(x, 2 equal halves,
// axis); y = Mul(a, Sigmoid(b)). Fused into memplan:Glu (graph/ops/glu_op.h), planned as glu (self
// kept); read node by node the Sigmoid's result is kept as well, a half-size tensor per block.
//
// torch 2.x, saved_tensors_hooks on x [2, 8, 16] fp32: F.glu(x, 1) keeps 1024 bytes (x), the same
// gate written as a, b = x.chunk(2, 1); a * torch.sigmoid(b) keeps 1536 (x, through the views, and
// sigmoid(b)). Both export Split, Sigmoid, Mul; they differ in the Split: F.glu's writes no sizes
// (two equal outputs, or num_outputs = 2 at opset 18), chunk's writes its sizes (the `split`
// attribute or input). So only a Split without sizes is fused; a written-out gate stays unfused,
// planned as eager autograd runs it. The first half must feed only the Mul, the second only the
// Sigmoid, and the Sigmoid only the Mul; b * sigmoid(a) is not F.glu and is left as it is.

#include "graph/fusion/patterns.h"
#include "graph/ops/glu_op.h"

namespace memplan {

std::optional<FusionMatch> MatchGlu(const ProtoIndex& index, int split_node) {
  const auto& split = index.node(split_node);
  if (split.op_type() != "Split" || !(split.domain().empty() || split.domain() == "ai.onnx") ||
      split.output_size() != 2 || split.input_size() < 1)
    return std::nullopt;
  int64_t axis = 0;
  for (const auto& a : split.attribute()) {
    if (a.name() == "axis") axis = a.i();
    if (a.name() == "split") return std::nullopt;
    if (a.name() == "num_outputs" && a.i() != 2) return std::nullopt;
  }
  if (split.input_size() >= 2 && !split.input(1).empty()) return std::nullopt;
  const std::string& a = split.output(0);
  const std::string& b = split.output(1);
  auto sigmoid = SoleConsumerOp(index, b, "Sigmoid", 1);
  if (!sigmoid) return std::nullopt;
  const std::string& gate = index.node(*sigmoid).output(0);
  auto mul = SoleConsumerOp(index, gate, "Mul", 2);
  if (!mul || OtherOperand(index.node(*mul), gate) != a || index.SoleConsumer(a) != mul)
    return std::nullopt;
  FusionMatch m;
  m.nodes = {split_node, *sigmoid, *mul};
  m.last = *mul;
  m.fused = FusedNode(glu::kOpType, glu::kDomain, {split.input(0)}, index.node(*mul).output(0));
  SetIntAttribute(m.fused, glu::kAxis, axis);
  return m;
}

}  // namespace memplan
