#include <string>
#include <vector>

#include "graph/ops/geometry/broadcast.h"
#include "runtime/cuda/kernels/layout_kernels.h"

namespace memplan::cuda {
namespace {

Status CheckRank(size_t rank) {
  if (rank > static_cast<size_t>(kMaxRank))
    return MakeError("tensors of rank " + std::to_string(rank) + " exceed the CUDA kernels' " +
                     std::to_string(kMaxRank));
  return OkStatus();
}

}  // namespace

TensorShape ContiguousStrides(const TensorShape& shape) {
  TensorShape strides(shape.size(), 1);
  for (size_t i = shape.size(); i-- > 1;) strides[i - 1] = strides[i] * shape[i];
  return strides;
}

int64_t CopyCount(const StridedCopyGeometry& g) {
  int64_t n = 1;
  for (int i = 0; i < g.rank; ++i) n *= g.dims[i];
  return n;
}

void StridedOffsets(const StridedCopyGeometry& g, int64_t flat, int64_t& src, int64_t& dst) {
  src = g.src_offset;
  dst = g.dst_offset;
  for (int axis = g.rank - 1; axis >= 0; --axis) {
    const int64_t c = flat % g.dims[axis];
    flat /= g.dims[axis];
    src += c * g.src_strides[axis];
    dst += c * g.dst_strides[axis];
  }
}

Expected<StridedCopyGeometry> TransposeGeometry(const TensorShape& in,
                                                const std::vector<int64_t>& perm) {
  MEMPLAN_RETURN_IF_ERROR(CheckRank(in.size()));
  if (perm.size() != in.size()) return MakeError("Transpose: perm does not match the rank");
  std::vector<bool> seen(in.size(), false);
  const TensorShape in_strides = ContiguousStrides(in);
  StridedCopyGeometry g;
  g.rank = static_cast<int>(in.size());
  TensorShape out(in.size());
  for (size_t i = 0; i < perm.size(); ++i) {
    const int64_t p = perm[i] < 0 ? perm[i] + static_cast<int64_t>(in.size()) : perm[i];
    if (p < 0 || p >= static_cast<int64_t>(in.size()) || seen[static_cast<size_t>(p)])
      return MakeError("Transpose: perm is not a permutation of the axes");
    seen[static_cast<size_t>(p)] = true;
    out[i] = in[static_cast<size_t>(p)];
    g.dims[i] = out[i];
    g.src_strides[i] = in_strides[static_cast<size_t>(p)];
  }
  const TensorShape out_strides = ContiguousStrides(out);
  for (size_t i = 0; i < out.size(); ++i) g.dst_strides[i] = out_strides[i];
  return g;
}

Expected<StridedCopyGeometry> BlockGeometry(const TensorShape& whole, const TensorShape& starts,
                                            const TensorShape& steps, const TensorShape& dims,
                                            bool into_block) {
  MEMPLAN_RETURN_IF_ERROR(CheckRank(whole.size()));
  if (starts.size() != whole.size() || steps.size() != whole.size() || dims.size() != whole.size())
    return MakeError("block geometry: ranks differ");
  const TensorShape whole_strides = ContiguousStrides(whole);
  const TensorShape block_strides = ContiguousStrides(dims);
  StridedCopyGeometry g;
  g.rank = static_cast<int>(whole.size());
  int64_t whole_offset = 0;
  for (size_t i = 0; i < whole.size(); ++i) {
    const int64_t last = starts[i] + (dims[i] - 1) * steps[i];
    if (dims[i] > 0 && (starts[i] < 0 || starts[i] >= whole[i] || last < 0 || last >= whole[i]))
      return MakeError("block geometry: axis " + std::to_string(i) + " leaves the tensor");
    g.dims[i] = dims[i];
    whole_offset += starts[i] * whole_strides[i];
    const int64_t whole_stride = whole_strides[i] * steps[i];
    g.src_strides[i] = into_block ? whole_stride : block_strides[i];
    g.dst_strides[i] = into_block ? block_strides[i] : whole_stride;
  }
  (into_block ? g.src_offset : g.dst_offset) = whole_offset;
  return g;
}

Expected<StridedCopyGeometry> ExpandGeometry(const TensorShape& in, const TensorShape& out) {
  MEMPLAN_RETURN_IF_ERROR(CheckRank(out.size()));
  if (in.size() > out.size()) return MakeError("Expand: the target has a lower rank");
  // `in` expands to `out` exactly when broadcasting them gives `out` (the shared rule).
  auto broadcast = BroadcastDims(in, out);
  if (!broadcast.ok() || *broadcast != out)
    return MakeError("Expand: " + DimsToString(in) + " does not broadcast to " + DimsToString(out));
  const TensorShape out_strides = ContiguousStrides(out);
  const std::vector<int64_t> in_strides = BroadcastStrides(in, out);
  StridedCopyGeometry g;
  g.rank = static_cast<int>(out.size());
  for (size_t i = 0; i < out.size(); ++i) {
    g.dims[i] = out[i];
    g.dst_strides[i] = out_strides[i];
    g.src_strides[i] = in_strides[i];
  }
  return g;
}

Expected<WhereGeometry> MakeWhereGeometry(const TensorShape& condition, const TensorShape& x,
                                          const TensorShape& y, TensorShape& out) {
  MEMPLAN_TRY(TensorShape cx, BroadcastShapes(condition, x));
  MEMPLAN_TRY(out, BroadcastShapes(cx, y));
  MEMPLAN_RETURN_IF_ERROR(CheckRank(out.size()));
  WhereGeometry g;
  g.rank = static_cast<int>(out.size());
  for (size_t i = 0; i < out.size(); ++i) g.out_dims[i] = out[i];
  const TensorShape* operands[3] = {&condition, &x, &y};
  for (int k = 0; k < 3; ++k) {
    MEMPLAN_TRY(StridedCopyGeometry e, ExpandGeometry(*operands[k], out));
    for (size_t i = 0; i < out.size(); ++i) g.strides[k][i] = e.src_strides[i];
  }
  return g;
}

}  // namespace memplan::cuda
