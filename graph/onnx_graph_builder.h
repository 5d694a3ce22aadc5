#pragma once
// Builds the Graph's values and nodes from a parsed ModelProto, with the structural checks that
// must run before onnx::checker (whose messages for cycles and dangling inputs are less clear).
// Shapes of node outputs are left unknown; shape_propagation fills them. Internal to graph/.

#include <onnx/onnx_pb.h>

#include "graph/expected.h"
#include "graph/graph.h"
#include "graph/onnx_import.h"

namespace memplan {

// Errors: subgraph ops, a value produced twice, a node input or graph output nothing produces,
// a cycle, negative dims, dims whose element/byte count overflows, external data outside the
// model's folder, an unknown batch symbol.
Expected<Graph> BuildGraphFromProto(const onnx::ModelProto& model, const ImportOptions& options);

}  // namespace memplan
