#include "runtime/cpu/kernels/broadcast.h"

#include <algorithm>
#include <string>

#include "runtime/cpu/kernels/kernel_util.h"

namespace memplan {

Expected<TensorShape> BroadcastShapes(const TensorShape& a, const TensorShape& b,
                                      std::string_view op) {
  const size_t rank = std::max(a.size(), b.size());
  TensorShape out(rank, 1);
  for (size_t i = 0; i < rank; ++i) {
    const int64_t da = i < rank - a.size() ? 1 : a[i - (rank - a.size())];
    const int64_t db = i < rank - b.size() ? 1 : b[i - (rank - b.size())];
    if (da != db && da != 1 && db != 1) {
      return MakeError(std::string(op) + ": shapes " + ShapeToString(a) + " and " +
                       ShapeToString(b) + " do not broadcast");
    }
    out[i] = da == 1 ? db : da;
  }
  return out;
}

std::vector<int64_t> BroadcastStrides(const TensorShape& shape, const TensorShape& out) {
  MEMPLAN_CHECK(shape.size() <= out.size());
  const std::vector<int64_t> own = ContiguousStrides(shape);
  const size_t lead = out.size() - shape.size();
  std::vector<int64_t> strides(out.size(), 0);
  for (size_t i = 0; i < shape.size(); ++i) {
    MEMPLAN_CHECK(shape[i] == out[lead + i] || shape[i] == 1);
    strides[lead + i] = shape[i] == 1 ? 0 : own[i];
  }
  return strides;
}

Tensor SumToShape(const KernelContext& ctx, const Tensor& tensor, const TensorShape& target,
                  DType dtype) {
  Tensor result = NewOutput(ctx, target, dtype);
  float* out = result.mutable_data();
  const float* in = tensor.data();
  const std::array<std::vector<int64_t>, 1> strides = {BroadcastStrides(target, tensor.shape())};
  ForEachBroadcastIndex(tensor.shape(), strides, [&](int64_t i, const std::array<int64_t, 1>& off) {
    out[off[0]] += in[i];
  });
  RoundToOwnDType(result);
  return result;
}

Tensor BroadcastTo(const KernelContext& ctx, const Tensor& tensor, const TensorShape& out_shape) {
  Tensor result = NewOutput(ctx, out_shape, tensor.dtype());
  float* out = result.mutable_data();
  const float* in = tensor.data();
  const std::array<std::vector<int64_t>, 1> strides = {BroadcastStrides(tensor.shape(), out_shape)};
  ForEachBroadcastIndex(out_shape, strides,
                        [&](int64_t i, const std::array<int64_t, 1>& off) { out[i] = in[off[0]]; });
  return result;
}

}  // namespace memplan
