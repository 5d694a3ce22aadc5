#pragma once
// Shared pieces of shape rules: axis normalisation, node-named errors. Broadcasting is the shared
// geometry's (graph/ops/geometry/broadcast.h).

#include <cstdint>
#include <string>

#include "graph/dim.h"
#include "graph/expected.h"
#include "graph/ops/geometry/broadcast.h"
#include "graph/ops/op_schema.h"

namespace memplan {

// Maps a possibly negative axis into [0, rank); error when out of range, naming the node.
Expected<int64_t> NormalizeAxis(int64_t axis, size_t rank, const Node& node);

// "node 'name' (OpType): <what>": the prefix every shape-rule error uses.
std::string NodeError(const Node& node, const std::string& what);

// An integer Div or Mod whose divisor's contents hold a known 0 (shape arithmetic such as
// `seq // 0`): an error naming the node, rather than contents left unknown, which became a
// generated unk_N symbol the user was then asked to bind.
Status RefuseZeroDivisor(const Node& node, const TensorInfo& divisor);

// One output with the given dtype and shape.
std::vector<TensorInfo> SingleOutput(DType dtype, Shape shape);

}  // namespace memplan
