#pragma once
// Shared pieces of shape rules: numpy broadcasting over symbolic dims, axis normalisation.

#include <cstdint>
#include <string>

#include "graph/dim.h"
#include "graph/expected.h"
#include "graph/ops/op_schema.h"

namespace memplan {

// Multidirectional (numpy) broadcasting. Equal dims stay; a 1 yields to the other; a symbol
// against a constant > 1 takes the constant (the model implies they are equal). Two different
// constants > 1 are an error.
Expected<Shape> BroadcastShapes(const Shape& a, const Shape& b);

// Maps a possibly negative axis into [0, rank); error when out of range, naming the node.
Expected<int64_t> NormalizeAxis(int64_t axis, size_t rank, const Node& node);

// "node 'name' (OpType): <what>": the prefix every shape-rule error uses.
std::string NodeError(const Node& node, const std::string& what);

// One output with the given dtype and shape.
std::vector<TensorInfo> SingleOutput(DType dtype, Shape shape);

}  // namespace memplan
