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

//
// libonnx also divides by window strides without checking them (a 0 stride in Conv or a pool is
// SIGFPE) and reads a Slice's steps as a 32-bit int while propagating shape-tensor values (a step
// of 2^31 or more, or INT64_MIN, loops or allocates without bound, or reads out of bounds: found
// with python3-onnx 1.12's infer_shapes(..., data_prop=True), the same library).
// RefuseWhatLibOnnxCannotInfer names such a node before libonnx sees it; every value it refuses
// is invalid ONNX or beyond any tensor length.

#include <onnx/onnx_pb.h>

#include "graph/expected.h"

namespace memplan {

// An error naming the first node (in this graph or a subgraph) whose window attributes (strides,
// dilations, kernel_shape not positive; pads negative), DepthToSpace/SpaceToDepth blocksize (not
// positive) or constant Slice steps (0, or beyond +-(2^31-1)) libonnx's inference cannot take.
Status RefuseWhatLibOnnxCannotInfer(const onnx::GraphProto& graph);

// Adds an empty tensor-type value_info for every Shape input that a node of the same graph (or
// subgraph) produces and that has no declared type.
void DeclareUntypedShapeInputs(onnx::GraphProto& graph);

}  // namespace memplan
