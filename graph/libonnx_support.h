#pragma once
// Which models this build's libonnx can check and shape-infer. Debian's libonnx 1.12 knows the
// standard domains up to ai.onnx opset 17; newer models are valid ONNX it cannot judge (at opset
// 18 it applies the opset-13 ReduceMean schema to a two-input ReduceMean and calls the model
// invalid; at opset 23 it has no Attention). Such a model must never be refused because of the
// library's age: the importer then skips libonnx's checker and shape inference, and memplan's own
// structural checks (graph/onnx_graph_builder.h) and registry shape rules stand in.
// Internal to graph/: it includes libonnx headers.

#include <onnx/onnx_pb.h>

#include <string>

namespace memplan {

struct LibOnnxSupport {
  bool covered = true;  // libonnx knows every imported opset and every standard-domain op
  std::string reason;   // why not, naming the opset or op; empty when covered
};

// Decided per model: libonnx's checker and inference see the whole graph at once, and an op it
// misreads at a newer opset (ReduceMean-18 read as ReduceMean-13) would poison what it infers
// downstream, so a partly known model is handed to memplan's rules entirely.
LibOnnxSupport AssessLibOnnxSupport(const onnx::ModelProto& model);

// The note the importer records when libonnx is skipped (shown by inspect and analyze).
std::string LibOnnxSkippedNote(const LibOnnxSupport& support);

}  // namespace memplan
