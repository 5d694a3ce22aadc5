#pragma once
// Validation of every tensor a model file stores (initializers and tensor attributes such as a
// Constant's `value`) before libonnx or memplan reads one. libonnx 1.12 trusts a tensor's dims:
// an int64 Constant whose raw_data is shorter than its dims claim is read past its end. A model
// file is untrusted, so here each tensor must be self-consistent:
//   * a defined data type (an external weight of type UNDEFINED would vanish from the counts);
//   * non-negative dims whose element count fits int64;
//   * inline data, when present, exactly as long as the dims claim (raw_data bytes or the typed
//     field's element count); a tensor with no data at all is metadata only and fine;
//   * external data: every `location` entry inside the model's folder, `offset` and `length`
//     non-negative decimal integers whose sum fits int64, and `length` equal to the tensor's bytes.
// Internal to graph/: it includes libonnx headers, which are linked PRIVATE.

#include <onnx/onnx_pb.h>

#include "graph/expected.h"

namespace memplan {

// Every tensor of the graph's initializers and of its nodes' TENSOR/TENSORS attributes. The error
// names the tensor ("initializer 'W'", "node 'c' (Constant) attribute 'value'").
Status ValidateStoredTensors(const onnx::GraphProto& graph);

}  // namespace memplan
