#pragma once
// The concrete shape of a tensor at run time: one size per dim, every size known. The symbolic
// shape the IR carries (dims that may name batch or sequence length) is graph/dim.h's `Shape`;
// runtime/program_shapes.h evaluates one into the other under the dim bindings.
//
// Its own header so the CUDA kernels (compiled by nvcc, free of the CPU tensor) share the type.

#include <cstdint>
#include <vector>

namespace memplan {

using TensorShape = std::vector<int64_t>;

}  // namespace memplan
