#pragma once
// Buffers a model registered (nn.Module.register_buffer: Whisper's sinusoidal positional table,
// BatchNorm's running statistics, masks) are initializers in ONNX like its parameters, and a
// buffer a gradient can reach (added to an activation) looks trainable to
// MarkTrainableParameters. PyTorch never gives a buffer a gradient or optimizer state.
//
// The torch.export-based exporter (torch.onnx.export(dynamo=True)) records the graph signature:
// each initializer's value_info carries metadata_props
// "pkg.torch.export.graph_signature.InputSpec.kind" = "PARAMETER" or "BUFFER" (IR 10's
// ValueInfoProto.metadata_props, field 4, which this libonnx may not know: read from the unknown
// fields then). A BUFFER is untrained here, as torch has it; so is an initializer the signature
// records as neither PARAMETER nor BUFFER: a constant the exporter lifted (an RMSNorm's exponent
// 2.0 and epsilon, arange's float bounds), which a gradient would otherwise treat as a weight
// (Pow then saves its result for the exponent's gradient: Llama's row +29%). The exporter's
// optimizer folds Transpose(weight) into a new initializer whose metadata names the weight it
// was folded from; that one is the parameter. The TorchScript exporter records no
// signature: buffers and parameters look alike there, and the floating initializers of rank >= 2
// that reach the loss only through Add / Sub (the way a positional table is used; a Linear's bias
// is rank 1) are named in a warning, since they may be buffers counted as trained (or
// parameters, as ViT's pos_embed: the export cannot say).

#include <onnx/onnx_pb.h>

#include <set>
#include <string>

#include "graph/graph.h"

namespace memplan {

// What the export's graph signature says, read from the proto before the import rewrites it.
struct ExportedBuffers {
  bool has_signature = false;     // some value carries graph-signature metadata
  std::set<std::string> buffers;  // the names it records as BUFFER
  // The names it records as PARAMETER, and the initializers the exporter's optimizer folded from
  // one (its metadata "pkg.onnxscript.optimizer.folded_from" names a parameter: Transpose(weight)
  // stored transposed, which is the weight).
  std::set<std::string> parameters;
};
ExportedBuffers ReadExportedBuffers(const onnx::GraphProto& graph);

// After MarkTrainableParameters: the signature's buffers become untrained (Value::trainable =
// false), with a warning naming them, and so do the lifted constants (no warning: they are not
// the model's state); without a signature, a warning names the trainable tables only Add / Sub
// read (possible buffers).
void ApplyExportedBuffers(const ExportedBuffers& exported, Graph& graph);

}  // namespace memplan
