#include "runtime/cpu/kernels/broadcast.h"

#include <string>

#include "runtime/cpu/kernels/kernel_util.h"

namespace memplan {

Expected<TensorShape> BroadcastShapes(const TensorShape& a, const TensorShape& b,
                                      std::string_view op) {
  auto out = BroadcastDims(a, b);
  if (!out.ok()) return MakeError(std::string(op) + ": " + out.error().message);
  return out;
}

void PermuteInto(const float* in, const TensorShape& in_shape, const std::vector<int64_t>& axes,
                 float* out) {
  const std::vector<int64_t> in_strides = ContiguousStrides(in_shape);
  TensorShape shape;
  std::array<std::vector<int64_t>, 1> strides;
  for (int64_t axis : axes) {
    shape.push_back(in_shape[static_cast<size_t>(axis)]);
    strides[0].push_back(in_strides[static_cast<size_t>(axis)]);
  }
  ForEachBroadcastIndex(shape, strides,
                        [&](int64_t i, const std::array<int64_t, 1>& off) { out[i] = in[off[0]]; });
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
