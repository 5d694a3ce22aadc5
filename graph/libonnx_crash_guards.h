#pragma once
// Inputs that crash Debian's libonnx 1.12 shape inference, and how the importer steers around
// them before calling it. Internal to graph/: it includes libonnx headers.
//
// Shape (opset 15 and later) has a data-propagation function that reads its input's type without
// checking that one exists. With error_mode 0 (skip what cannot be inferred), a node whose
// inference fails - a MatMul whose inner dims disagree after a mistyped Reshape target, a
// com.microsoft op - leaves its output with no type at all, and a Shape reading that output
// dereferences null (SIGSEGV; found by tests/fuzz/fuzz_import, reproduced in python3-onnx with
// infer_shapes(..., data_prop=True)). Declaring such an input with an empty tensor type (element
// type unset, no shape) gives the function a type to read; libonnx merges whatever it does infer
// into that declaration, so nothing it would have known is lost.

#include <onnx/onnx_pb.h>

namespace memplan {

// Adds an empty tensor-type value_info for every Shape input that a node of the same graph (or
// subgraph) produces and that has no declared type.
void DeclareUntypedShapeInputs(onnx::GraphProto& graph);

}  // namespace memplan
