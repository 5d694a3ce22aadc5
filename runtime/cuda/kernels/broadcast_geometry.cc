// Host-side broadcasting geometry for the elementwise kernels (plain C++, no device code): the
// shared rule of graph/ops/geometry/broadcast.h laid out in fixed-size arrays.

#include "runtime/cuda/kernels/broadcast_geometry.h"

#include <algorithm>
#include <string>

#include "graph/ops/geometry/broadcast.h"

namespace memplan::cuda {

Expected<TensorShape> BroadcastShapes(const TensorShape& a, const TensorShape& b) {
  const size_t rank = std::max(a.size(), b.size());
  if (rank > static_cast<size_t>(kMaxRank)) {
    return MakeError("CUDA elementwise kernels support rank up to " + std::to_string(kMaxRank) +
                     ", got " + std::to_string(rank));
  }
  return BroadcastDims(a, b);
}

BroadcastGeometry MakeBroadcastGeometry(const TensorShape& a, const TensorShape& b,
                                        const TensorShape& out) {
  BroadcastGeometry g;
  g.rank = static_cast<int>(out.size());
  const std::vector<int64_t> a_strides = BroadcastStrides(a, out);
  const std::vector<int64_t> b_strides = BroadcastStrides(b, out);
  for (size_t axis = 0; axis < out.size(); ++axis) {
    g.out_dims[axis] = out[axis];
    g.a_strides[axis] = a_strides[axis];
    g.b_strides[axis] = b_strides[axis];
  }
  return g;
}

}  // namespace memplan::cuda
