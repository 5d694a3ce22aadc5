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

// The flat indices of [0, n) this thread covers in a grid-stride loop, in increasing order:
//   for (const int64_t i : GridStride(n)) y[i] = f(x[i]);
class GridStride {
 public:
  struct Iterator {
    int64_t index;
    int64_t stride;
    __device__ int64_t operator*() const { return index; }
    __device__ Iterator& operator++() {
      index += stride;
      return *this;
    }
    // Only ever compared with end(): true while the index is below n.
    __device__ bool operator!=(const Iterator& end) const { return index < end.index; }
  };

  __device__ explicit GridStride(int64_t n) : n_(n) {}
  __device__ Iterator begin() const {
    return {blockIdx.x * int64_t{blockDim.x} + threadIdx.x, int64_t{blockDim.x} * gridDim.x};
  }
  __device__ Iterator end() const { return {n_, 0}; }

 private:
  int64_t n_;
};

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
