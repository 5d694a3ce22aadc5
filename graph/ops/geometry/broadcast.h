#pragma once
// Numpy-style (multidirectional) broadcasting: the one rule the registry's shape rules (symbolic
// dims), the CPU kernels and the CUDA ops (concrete dims) share. Shapes align from the right; a
// missing dim counts as 1; equal dims stay; a 1 yields to the other dim; two different dims > 1
// do not broadcast.

#include <cstdint>
#include <string>
#include <vector>

#include "graph/dim.h"
#include "graph/expected.h"

namespace memplan {

// Symbolic broadcasting. A symbol against a constant > 1 takes the constant (the model implies
// they are equal); two different symbols take the second (both must be equal at run time).
// Unknown shapes give an unknown shape. Errors: two different constants > 1.
Expected<Shape> BroadcastShapes(const Shape& a, const Shape& b);

// Concrete broadcasting, or the error "shapes [2, 3] and [4, 2] do not broadcast".
Expected<std::vector<int64_t>> BroadcastDims(const std::vector<int64_t>& a,
                                             const std::vector<int64_t>& b);

// Element strides of a row-major tensor of `shape` seen through the broadcast shape `out`
// (right-aligned; 0 along dims where `shape` has size 1 or is missing).
// REQUIRES: shape broadcasts to out (an internal invariant).
std::vector<int64_t> BroadcastStrides(const std::vector<int64_t>& shape,
                                      const std::vector<int64_t>& out);

// "[2, 3, 4]", for error messages.
std::string DimsToString(const std::vector<int64_t>& dims);

}  // namespace memplan
