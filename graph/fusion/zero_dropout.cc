// zero_dropout: a Dropout whose ratio is the constant 0 (nn.Dropout(p=0.0), which configs such as
// ViT's and many fine-tuning recipes leave in place) becomes Identity.
//
// With p == 0 PyTorch returns its input, in training mode too (ATen's _dropout_impl: "if (p == 0
// || !train || input.numel() == 0) return input"), so nothing is saved and no new tensor is made.
// The exported Dropout node would be planned as a new output tensor, and in training mode its mask
// output as a second one; Identity is a view of its input (graph/ops/shape_ops_query.cc), which is
// what runs. The ratio is the `ratio` attribute (opset < 12) or the constant input 1 (opset >= 12);
// the training_mode input does not matter when p == 0.
//
// Left alone: a ratio that is not a constant, or not 0; a mask output that something reads or
// that is a graph output.

#include "graph/fusion/patterns.h"

namespace memplan {

std::optional<FusionMatch> MatchZeroDropout(const ProtoIndex& index, int dropout) {
  const auto& d = index.node(dropout);
  if (d.op_type() != "Dropout" || !(d.domain().empty() || d.domain() == "ai.onnx") ||
      d.input_size() < 1 || d.input(0).empty() || d.output_size() < 1 || d.output(0).empty())
    return std::nullopt;
  std::optional<double> ratio;
  for (const auto& a : d.attribute())
    if (a.name() == "ratio" && a.type() == onnx::AttributeProto::FLOAT) ratio = a.f();
  if (d.input_size() >= 2 && !d.input(1).empty()) {
    if (ratio) return std::nullopt;  // both forms: not a node an exporter writes
    ratio = index.Scalar(d.input(1));
  }
  // An absent ratio means ONNX's default, 0.5.
  if (!ratio || *ratio != 0.0) return std::nullopt;
  for (int i = 1; i < d.output_size(); ++i) {
    const std::string& mask = d.output(i);
    if (!mask.empty() && (!index.Consumers(mask).empty() || index.IsGraphOutput(mask)))
      return std::nullopt;
  }
  FusionMatch m;
  m.nodes = {dropout};
  m.last = dropout;
  m.fused = FusedNode("Identity", "", {d.input(0)}, d.output(0));
  return m;
}

}  // namespace memplan
