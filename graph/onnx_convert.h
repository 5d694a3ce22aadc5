#pragma once
// Conversions from ONNX protobuf messages to memplan IR pieces (dtypes, dims, attributes, small
// tensor contents). Internal to graph/: it includes libonnx headers, which are linked PRIVATE.

#include <onnx/onnx_pb.h>

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "graph/attributes.h"
#include "graph/dtype.h"
#include "graph/expected.h"

namespace memplan {

// Element count of a tensor with these dims, or nullopt when it overflows int64.
std::optional<int64_t> ElementCount(const std::vector<int64_t>& dims);

// The dims of a TensorProto; an error names the tensor (`what`, e.g. "initializer 'w'") when a
// dim is negative.
Expected<std::vector<int64_t>> TensorDims(const onnx::TensorProto& tensor, const std::string& what);

bool IsExternal(const onnx::TensorProto& tensor);
// The "location" entry of an external tensor; nullopt when there is none.
std::optional<std::string> ExternalLocation(const onnx::TensorProto& tensor);

// The values of a small integer/bool tensor stored inline (typed fields or raw_data), when it has
// at most `max_elements` elements; nullopt otherwise (external, floating, too large, malformed).
std::optional<std::vector<int64_t>> SmallIntegerValues(const onnx::TensorProto& tensor,
                                                       int64_t max_elements);
// The same for small floating tensors (float32/float64/float16/bfloat16).
std::optional<std::vector<double>> SmallFloatValues(const onnx::TensorProto& tensor,
                                                    int64_t max_elements);

// A node's attributes. GRAPH attributes are rejected by the caller before this runs; sparse
// tensors and type protos are skipped (no rule reads them).
Expected<Attributes> ConvertAttributes(const onnx::NodeProto& node, const std::string& node_label);

}  // namespace memplan
