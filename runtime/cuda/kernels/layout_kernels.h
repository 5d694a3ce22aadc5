#pragma once
// Data-movement kernels for the layout ops (Transpose, Slice, Concat, Split, Expand, Where) and
// the index math they share. Every op is one strided copy: walk the `dims` of the copied block in
// row-major order and read/write each element at `offset + sum(coordinate[i] * stride[i])` on
// either side. The geometry is plain C++ (tested on CPU); the kernels only follow it.

#include <cuda_runtime_api.h>

#include <cstdint>

#include "graph/expected.h"
#include "runtime/cuda/kernels/cuda_kernels.h"

namespace memplan::cuda {

struct StridedCopyGeometry {
  int rank = 0;
  int64_t dims[kMaxRank] = {};
  int64_t src_strides[kMaxRank] = {};
  int64_t dst_strides[kMaxRank] = {};
  int64_t src_offset = 0;
  int64_t dst_offset = 0;
};

// Row-major element strides of a dense shape.
TensorShape ContiguousStrides(const TensorShape& shape);
// The element count of the copied block.
int64_t CopyCount(const StridedCopyGeometry& g);
// The source and destination element offsets of the block's `flat`-th element (host mirror of
// the device arithmetic, for tests and validation).
void StridedOffsets(const StridedCopyGeometry& g, int64_t flat, int64_t& src, int64_t& dst);

// Geometry of dst (dense, shape `out`) = transpose(src (dense, shape `in`), perm).
// Errors: perm is not a permutation of the axes, rank beyond kMaxRank.
Expected<StridedCopyGeometry> TransposeGeometry(const TensorShape& in,
                                                const std::vector<int64_t>& perm);
// Geometry of a block `dims` at element `starts` (stepping by `steps`) inside a dense `whole`,
// mapped to a dense block: `into_block` copies whole -> block (Slice, Split), else block -> whole
// (their backward, Concat).
Expected<StridedCopyGeometry> BlockGeometry(const TensorShape& whole, const TensorShape& starts,
                                            const TensorShape& steps, const TensorShape& dims,
                                            bool into_block);
// Geometry of dst (dense, `out`) = src (`in`) broadcast to `out` (numpy rules, right-aligned).
Expected<StridedCopyGeometry> ExpandGeometry(const TensorShape& in, const TensorShape& out);

// dst[dst_index] = src[src_index] (or += with atomics when `accumulate`: broadcast sources map
// several block elements to one destination element).
Status StridedCopy(const float* src, float* dst, const StridedCopyGeometry& g, bool accumulate,
                   cudaStream_t stream);

// out = condition != 0 ? x : y over the broadcast of the three shapes (given as geometry of
// each operand against `out`). REQUIRES: all strides right-aligned to `rank`.
struct WhereGeometry {
  int rank = 0;
  int64_t out_dims[kMaxRank] = {};
  int64_t strides[3][kMaxRank] = {};
};
Expected<WhereGeometry> MakeWhereGeometry(const TensorShape& condition, const TensorShape& x,
                                          const TensorShape& y, TensorShape& out);
Status WhereForward(const float* condition, const float* x, const float* y, float* out,
                    const WhereGeometry& g, cudaStream_t stream);
// dx/dy (zeroed first by the caller, either may be null) += grad routed by the condition.
Status WhereBackward(const float* condition, const float* grad_out, float* dx, float* dy,
                     const WhereGeometry& g, cudaStream_t stream);

}  // namespace memplan::cuda
