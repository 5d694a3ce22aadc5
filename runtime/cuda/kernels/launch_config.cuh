#pragma once
// Launch geometry and broadcasting helpers shared by the .cu files of runtime/cuda/kernels.

#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>

#include "runtime/cuda/kernels/broadcast_geometry.h"

namespace memplan::cuda {

inline constexpr int kThreadsPerBlock = 256;
// Grid-stride loops cover any n; this caps the grid so huge tensors do not ask for absurd grids.
inline constexpr int64_t kMaxBlocks = 65535;

inline unsigned BlocksFor(int64_t n) {
  return static_cast<unsigned>(
      std::clamp<int64_t>((n + kThreadsPerBlock - 1) / kThreadsPerBlock, 1, kMaxBlocks));
}

__device__ inline void BroadcastOffsets(const BroadcastGeometry& g, int64_t flat, int64_t& a,
                                        int64_t& b) {
  a = 0;
  b = 0;
  for (int axis = g.rank - 1; axis >= 0; --axis) {
    const int64_t coordinate = flat % g.out_dims[axis];
    flat /= g.out_dims[axis];
    a += coordinate * g.a_strides[axis];
    b += coordinate * g.b_strides[axis];
  }
}

}  // namespace memplan::cuda
