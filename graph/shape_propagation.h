#pragma once
// Shape propagation over an imported Graph: walks nodes in topological order and asks each op's
// registry rule for output dtype/shape/contents. Where a rule cannot tell, ONNX's own shape
// inference (passed in as InferredTypes, so this file needs no ONNX headers) fills the gap.

#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "graph/expected.h"
#include "graph/graph.h"

namespace memplan {

// One dim of an ONNX-inferred type: a value, a named parameter, or neither (unknown).
struct InferredDim {
  std::optional<int64_t> value;
  std::string param;
};

struct InferredType {
  DType dtype = DType::kUndefined;
  bool has_shape = false;
  std::vector<InferredDim> dims;
};

// ONNX value_info (and graph outputs) after onnx::shape_inference, by value name.
using InferredTypes = std::unordered_map<std::string, InferredType>;

// Fills dtype, shape, contents and kind of every node output, in one pass (linear in the graph).
// Appends warnings to graph.warnings for unknown ops and for floating activations whose shape
// stays unknown. Errors: a rule's error (naming the node) or a shape whose element/byte count
// overflows int64.
Status PropagateShapes(Graph& graph, const InferredTypes& inferred);

// The byte size of a value as a Dim; an error names the value when its element or byte count
// overflows int64 (a crafted shape such as [2^40, 2^40]).
Status CheckValueSize(const Graph& graph, const Value& value);

}  // namespace memplan
