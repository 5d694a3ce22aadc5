#pragma once
// Host-side numpy broadcasting geometry for the elementwise kernels (plain C++, no device code).

#include <cstdint>

#include "runtime/cuda/kernels/cuda_kernels.h"

namespace memplan::cuda {

// Output dims and per-operand element strides (0 on broadcast axes), right-aligned to `rank`.
// Passed to kernels by value.
struct BroadcastGeometry {
  int rank = 0;
  int64_t out_dims[kMaxRank] = {};
  int64_t a_strides[kMaxRank] = {};
  int64_t b_strides[kMaxRank] = {};
};

// REQUIRES: out is BroadcastShapes(a, b).
BroadcastGeometry MakeBroadcastGeometry(const TensorShape& a, const TensorShape& b,
                                        const TensorShape& out);

}  // namespace memplan::cuda
