// Gather (embedding rows on axis 0 with run-time indices; any axis with constant indices) and
// Dropout (counter-based masks, so recompute reproduces them from the seed).

#include "runtime/cuda/cuda_storage.h"
#include "runtime/cuda/kernels/cuda_kernels.h"
#include "runtime/cuda/kernels/layout_kernels.h"
#include "runtime/cuda/kernels/training_kernels.h"
#include "runtime/cuda/ops/cuda_op_table.h"
#include "runtime/cuda/ops/op_util.h"

namespace memplan::cuda {
namespace {

struct GatherLayout {
  size_t axis = 0;
  TensorShape out;
};

Expected<GatherLayout> GatherLayoutOf(const Attributes* a, const TensorShape& data,
                                      const TensorShape& indices) {
  MEMPLAN_TRY(int64_t axis, NormalizeAxis(a ? a->GetInt("axis", 0) : 0, data.size(), "Gather"));
  GatherLayout l;
  l.axis = static_cast<size_t>(axis);
  l.out.assign(data.begin(), data.begin() + axis);
  l.out.insert(l.out.end(), indices.begin(), indices.end());
  l.out.insert(l.out.end(), data.begin() + axis + 1, data.end());
  return l;
}

// Block copies for constant indices: output slot k along the gathered axes is data's slice
// indices[k] along `axis`. `to_data` reverses the direction (the backward scatter).
Status CopyConstantIndices(CudaContext& ctx, const TensorShape& data, const GatherLayout& l,
                           const std::vector<int64_t>& indices, const float* src, float* dst,
                           bool to_data) {
  int64_t outer = 1, inner = 1;
  for (size_t i = 0; i < l.axis; ++i) outer *= data[i];
  for (size_t i = l.axis + 1; i < data.size(); ++i) inner *= data[i];
  const int64_t dim = data[l.axis];
  const auto count = static_cast<int64_t>(indices.size());
  // data viewed as [outer, dim, inner], output as [outer, count, inner].
  const TensorShape data3{outer, dim, inner};
  const TensorShape out3{outer, count, inner};
  for (int64_t k = 0; k < count; ++k) {
    int64_t index = indices[static_cast<size_t>(k)];
    if (index < -dim || index >= dim)
      return MakeError("Gather: index " + std::to_string(index) + " out of range");
    if (index < 0) index += dim;
    MEMPLAN_TRY(StridedCopyGeometry from_data,
                BlockGeometry(data3, {0, index, 0}, {1, 1, 1}, {outer, 1, inner}, true));
    MEMPLAN_TRY(StridedCopyGeometry to_out,
                BlockGeometry(out3, {0, k, 0}, {1, 1, 1}, {outer, 1, inner}, false));
    StridedCopyGeometry g = from_data;  // data side as the source
    for (int i = 0; i < g.rank; ++i) g.dst_strides[i] = to_out.dst_strides[i];
    g.dst_offset = to_out.dst_offset;
    if (to_data) {
      std::swap(g.src_strides, g.dst_strides);
      std::swap(g.src_offset, g.dst_offset);
    }
    // Backward adds: two slots may name the same index.
    MEMPLAN_RETURN_IF_ERROR(StridedCopy(src, dst, g, /*accumulate=*/to_data, ctx.stream()));
  }
  return OkStatus();
}

Expected<std::vector<DeviceTensor>> GatherForward(CudaContext& ctx, const ForwardCall& call) {
  if (call.inputs.size() < 2 || !call.inputs[0].defined() || !call.inputs[1].defined())
    return MakeError("Gather: needs data and indices");
  const DeviceTensor& data = call.inputs[0];
  const DeviceTensor& indices = call.inputs[1];
  MEMPLAN_TRY(GatherLayout l, GatherLayoutOf(call.attributes, data.shape, indices.shape));
  MEMPLAN_TRY(F32Input fd, ctx.ReadF32(data));
  MEMPLAN_TRY(ForwardTarget t,
              PrepareOutput(ctx, call, 0, l.out, OutputDType(call, 0, data.dtype)));
  if (StorageOf(indices).host_values()) {
    MEMPLAN_TRY(std::vector<int64_t> idx, ConstantInts(indices, "Gather", "indices"));
    MEMPLAN_RETURN_IF_ERROR(
        CopyConstantIndices(ctx, data.shape, l, idx, fd.data, t.out.data(), false));
  } else if (l.axis == 0) {
    MEMPLAN_TRY(F32Input fi, ctx.ReadF32(indices));
    const int64_t rows = data.shape[0];
    MEMPLAN_RETURN_IF_ERROR(GatherRows(fd.data, rows, data.numel() / std::max<int64_t>(rows, 1),
                                       fi.data, indices.numel(), t.out.data(), ctx.stream()));
  } else {
    return Unsupported("Gather", "run-time indices on an axis other than 0");
  }
  MEMPLAN_RETURN_IF_ERROR(ctx.Commit(t.out));
  return std::vector<DeviceTensor>{t.tensor};
}

Status GatherBackward(CudaContext& ctx, const BackwardCall& call) {
  if (call.grad_outputs.empty() || !call.grad_outputs[0].defined()) return ZeroGradients(ctx, call);
  if (!WantsGradient(call, 0)) return OkStatus();
  if (call.inputs.size() < 2 || !call.inputs[1].defined())
    return MakeError("Gather backward: the indices were not saved");
  const TensorShape& data = call.input_shapes.at(0);
  const DeviceTensor& indices = call.inputs[1];
  MEMPLAN_TRY(GatherLayout l, GatherLayoutOf(call.attributes, data, indices.shape));
  MEMPLAN_TRY(F32Input dy, ctx.ReadF32(call.grad_outputs[0]));
  MEMPLAN_TRY(F32Output dx, GradientTarget(ctx, call, 0));
  if (StorageOf(indices).host_values()) {
    MEMPLAN_TRY(std::vector<int64_t> idx, ConstantInts(indices, "Gather", "indices"));
    MEMPLAN_RETURN_IF_ERROR(Fill(dx.data(), 0.0f, NumElements(data), ctx.stream()));
    MEMPLAN_RETURN_IF_ERROR(CopyConstantIndices(ctx, data, l, idx, dy.data, dx.data(), true));
  } else if (l.axis == 0) {
    MEMPLAN_TRY(F32Input fi, ctx.ReadF32(indices));
    const int64_t rows = data[0];
    MEMPLAN_RETURN_IF_ERROR(GatherRowsBackward(dy.data, fi.data, indices.numel(), rows,
                                               NumElements(data) / std::max<int64_t>(rows, 1),
                                               dx.data(), ctx.stream()));
  } else {
    return Unsupported("Gather", "run-time indices on an axis other than 0");
  }
  return ctx.Commit(dx);
}

Expected<float> DropoutRatio(const std::vector<DeviceTensor>& inputs, const Attributes* a) {
  if (inputs.size() > 1 && inputs[1].defined()) {
    const auto& host = StorageOf(inputs[1]).host_values();
    if (!host || host->size() != 1) return Unsupported("Dropout", "a ratio computed at run time");
    return (*host)[0];
  }
  return static_cast<float>(a ? a->GetFloat("ratio", 0.5) : 0.5);
}

Expected<std::vector<DeviceTensor>> DropoutForwardOp(CudaContext& ctx, const ForwardCall& call) {
  if (call.inputs.empty() || !call.inputs[0].defined()) return MakeError("Dropout: no input");
  const DeviceTensor& x = call.inputs[0];
  MEMPLAN_TRY(float ratio, DropoutRatio(call.inputs, call.attributes));
  if (ratio < 0.0f || ratio >= 1.0f) return MakeError("Dropout: ratio must be in [0, 1)");
  const bool drop = call.training && ratio > 0.0f;
  MEMPLAN_TRY(F32Input fx, ctx.ReadF32(x));
  MEMPLAN_TRY(ForwardTarget t, PrepareOutput(ctx, call, 0, x.shape, OutputDType(call, 0, x.dtype)));
  // The mask goes to the saved extra and/or the optional second output.
  std::vector<DeviceTensor> outs{t.tensor};
  DeviceTensor mask_output;
  if (call.num_outputs > 1) {
    MEMPLAN_TRY(mask_output, ForwardOutput(ctx, call, 1, x.shape, DType::kBool));
    outs.push_back(mask_output);
  }
  DeviceTensor mask_extra;
  if (auto it = call.extras.find("mask"); it != call.extras.end()) mask_extra = it->second;
  MEMPLAN_TRY(ScratchBuffer mask, ctx.ScratchF32(x.numel()));
  if (drop) {
    MEMPLAN_RETURN_IF_ERROR(DropoutForward(fx.data, t.out.data(), mask.f32(), x.numel(), ratio,
                                           call.seed, ctx.stream()));
  } else {
    MEMPLAN_RETURN_IF_ERROR(Axpby(1.0f, fx.data, 0.0f, t.out.data(), x.numel(), ctx.stream()));
    MEMPLAN_RETURN_IF_ERROR(Fill(mask.f32(), 1.0f, x.numel(), ctx.stream()));
  }
  MEMPLAN_RETURN_IF_ERROR(ctx.Commit(t.out));
  for (const DeviceTensor& dest : {mask_output, mask_extra})
    if (dest.defined())
      MEMPLAN_RETURN_IF_ERROR(ctx.Store(mask.data(), DType::kFloat32, dest, false));
  return outs;
}

Status DropoutBackwardOp(CudaContext& ctx, const BackwardCall& call) {
  if (call.grad_outputs.empty() || !call.grad_outputs[0].defined()) return ZeroGradients(ctx, call);
  if (!WantsGradient(call, 0)) return OkStatus();
  MEMPLAN_TRY(float ratio, DropoutRatio(call.inputs, call.attributes));
  MEMPLAN_TRY(F32Input dy, ctx.ReadF32(call.grad_outputs[0]));
  MEMPLAN_TRY(F32Output dx, GradientTarget(ctx, call, 0));
  const int64_t n = call.grad_inputs[0].numel();
  DeviceTensor mask;
  if (auto it = call.extras.find("mask"); it != call.extras.end()) mask = it->second;
  if (!mask.defined() && call.outputs.size() > 1) mask = call.outputs[1];
  if (call.training && ratio > 0.0f) {
    if (!mask.defined()) return MakeError("Dropout backward: the mask was not saved");
    MEMPLAN_TRY(F32Input fm, ctx.ReadF32(mask));
    MEMPLAN_RETURN_IF_ERROR(DropoutBackward(dy.data, fm.data, dx.data(), n, ratio, ctx.stream()));
  } else {
    MEMPLAN_RETURN_IF_ERROR(Axpby(1.0f, dy.data, 0.0f, dx.data(), n, ctx.stream()));
  }
  return ctx.Commit(dx);
}

}  // namespace

void RegisterGatherDropoutOps(CudaOpTable& table) {
  table.Register("Gather", GatherForward, GatherBackward);
  table.Register("Dropout", DropoutForwardOp, DropoutBackwardOp);
}

}  // namespace memplan::cuda
