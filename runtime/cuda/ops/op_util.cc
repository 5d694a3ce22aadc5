#include "runtime/cuda/ops/op_util.h"

#include <cstdint>

#include "runtime/cuda/cuda_storage.h"
#include "runtime/cuda/kernels/cuda_kernels.h"

namespace memplan::cuda {

Error Unsupported(std::string_view op, const std::string& why) {
  return MakeError("the cuda backend does not support " + std::string(op) + ": " + why);
}

Expected<DeviceTensor> ForwardOutput(CudaContext& ctx, const ForwardCall& call, size_t j,
                                     const TensorShape& shape, DType dtype) {
  if (j < call.outputs.size() && call.outputs[j].defined()) {
    const DeviceTensor& dest = call.outputs[j];
    if (dest.numel() != NumElements(shape))
      return MakeError(std::string(call.op_type) + " output " + std::to_string(j) + " " +
                       ShapeToString(shape) + " does not fit its buffer " +
                       ShapeToString(dest.shape));
    return dest.View(shape);
  }
  return ctx.ScratchTensor(shape, dtype);
}

DType OutputDType(const ForwardCall& call, size_t j, DType fallback) {
  if (j < call.outputs.size() && call.outputs[j].defined()) return call.outputs[j].dtype;
  return fallback;
}

Expected<ForwardTarget> PrepareOutput(CudaContext& ctx, const ForwardCall& call, size_t j,
                                      const TensorShape& shape, DType dtype) {
  ForwardTarget target;
  MEMPLAN_TRY(target.tensor, ForwardOutput(ctx, call, j, shape, dtype));
  MEMPLAN_TRY(target.out, ctx.WriteF32(target.tensor, /*accumulate=*/false));
  return target;
}

bool WantsGradient(const BackwardCall& call, size_t i) {
  return i < call.grad_inputs.size() && call.grad_inputs[i].defined();
}

namespace {

// A view op's input gradient is a view of its output gradient (analyzer/derivation/
// step_emission.cc): one buffer. A kernel that reads dY at one position while it writes dX at
// another (Transpose's permuted copy, Expand's zero-fill then add) would race with itself.
bool SharesStorageWithGradOutput(const BackwardCall& call, size_t i) {
  const void* target = StorageOf(call.grad_inputs[i]).data();
  for (const DeviceTensor& dy : call.grad_outputs)
    if (dy.defined() && StorageOf(dy).data() == target) return true;
  return false;
}

}  // namespace

Expected<F32Output> GradientTarget(CudaContext& ctx, const BackwardCall& call, size_t i) {
  if (!WantsGradient(call, i)) return F32Output();
  const bool add = i < call.accumulate.size() && call.accumulate[i];
  // Such a gradient is computed in scratch and copied over on Commit.
  return ctx.WriteF32(call.grad_inputs[i], add, SharesStorageWithGradOutput(call, i));
}

Expected<std::vector<int64_t>> ConstantInts(const DeviceTensor& t, std::string_view op,
                                            std::string_view what) {
  if (!t.defined()) return MakeError(std::string(op) + ": missing " + std::string(what));
  const auto& host = StorageOf(t).host_values();
  if (!host)
    return Unsupported(op, std::string(what) + " computed at run time (it must be a constant)");
  std::vector<int64_t> values;
  values.reserve(host->size());
  // Saturate: ONNX writes INT64_MAX for "to the end", which a float holds only approximately.
  constexpr float kLimit = 9.2e18f;
  for (float v : *host)
    values.push_back(v >= kLimit ? INT64_MAX : v <= -kLimit ? INT64_MIN : static_cast<int64_t>(v));
  return values;
}

Expected<int64_t> NormalizeAxis(int64_t axis, size_t rank, std::string_view op) {
  const auto r = static_cast<int64_t>(rank);
  if (axis < -r || axis >= r)
    return MakeError(std::string(op) + ": axis " + std::to_string(axis) +
                     " out of range for rank " + std::to_string(rank));
  return axis < 0 ? axis + r : axis;
}

}  // namespace memplan::cuda

namespace memplan::cuda {

Status ZeroGradients(CudaContext& ctx, const BackwardCall& call) {
  for (size_t i = 0; i < call.grad_inputs.size(); ++i) {
    if (!WantsGradient(call, i) || (i < call.accumulate.size() && call.accumulate[i])) continue;
    MEMPLAN_TRY(F32Output out, GradientTarget(ctx, call, i));
    MEMPLAN_RETURN_IF_ERROR(Fill(out.data(), 0.0f, call.grad_inputs[i].numel(), ctx.stream()));
    MEMPLAN_RETURN_IF_ERROR(ctx.Commit(out));
  }
  return OkStatus();
}

}  // namespace memplan::cuda
