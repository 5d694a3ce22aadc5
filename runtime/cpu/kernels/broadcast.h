#pragma once
// Numpy-style (multidirectional) broadcasting on concrete shapes (the shared rule of
// graph/ops/geometry/broadcast.h), its index walk, and its adjoint: summing a gradient back over
// the dims an input was broadcast along.

#include <array>
#include <cstdint>
#include <string_view>
#include <vector>

#include "graph/expected.h"
#include "graph/ops/geometry/broadcast.h"
#include "runtime/cpu/kernel_api.h"
#include "runtime/tensor.h"

namespace memplan {

// BroadcastDims of `a` and `b`, or its error prefixed with `op`.
Expected<TensorShape> BroadcastShapes(const TensorShape& a, const TensorShape& b,
                                      std::string_view op);

// BroadcastStrides (element strides of an operand through the broadcast shape) is the shared
// geometry's, graph/ops/geometry/broadcast.h.

// Calls visit(out_index, offsets) for every element of `out` in row-major order, where
// offsets[k] is the element offset in operand k (whose strides through `out` are strides[k]).
template <size_t N, class Visit>
void ForEachBroadcastIndex(const TensorShape& out,
                           const std::array<std::vector<int64_t>, N>& strides, Visit&& visit) {
  const size_t rank = out.size();
  const int64_t total = NumElements(out);
  std::vector<int64_t> counter(rank, 0);
  std::array<int64_t, N> offsets{};
  for (int64_t i = 0; i < total; ++i) {
    visit(i, offsets);
    for (size_t d = rank; d-- > 0;) {
      ++counter[d];
      for (size_t k = 0; k < N; ++k) offsets[k] += strides[k][d];
      if (counter[d] < out[d]) break;
      for (size_t k = 0; k < N; ++k) offsets[k] -= strides[k][d] * out[d];
      counter[d] = 0;
    }
  }
}

// out = in with its axes reordered: out's dim d is in's dim axes[d] (Transpose's perm), both
// dense row-major. The shape of out is `in_shape` permuted. REQUIRES: axes is a permutation.
void PermuteInto(const float* in, const TensorShape& in_shape, const std::vector<int64_t>& axes,
                 float* out);

// Sums `tensor` over the dims along which `target` was broadcast to reach tensor's shape.
// The result has shape `target` and dtype `dtype` (rounded to it), in ctx.output_category.
Tensor SumToShape(const KernelContext& ctx, const Tensor& tensor, const TensorShape& target,
                  DType dtype);

// `tensor` broadcast to `out` (a new buffer). REQUIRES: tensor's shape broadcasts to out.
Tensor BroadcastTo(const KernelContext& ctx, const Tensor& tensor, const TensorShape& out);

}  // namespace memplan
