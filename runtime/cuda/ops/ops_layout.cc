// Layout ops. Reshape, Flatten, Squeeze, Unsqueeze and Identity are views (the output shares the
// input's storage); Transpose, Slice, Split, Concat and Expand copy through StridedCopy
// (runtime/cuda/kernels/layout_kernels.h); Shape yields a constant.

#include <algorithm>
#include <numeric>
#include <utility>

#include "graph/ops/geometry/reshape.h"
#include "runtime/cuda/cuda_storage.h"
#include "runtime/cuda/kernels/cuda_kernels.h"
#include "runtime/cuda/kernels/layout_kernels.h"
#include "runtime/cuda/ops/cuda_op_table.h"
#include "runtime/cuda/ops/op_util.h"

namespace memplan::cuda {
namespace {

Status RequireInput(const ForwardCall& call) {
  if (call.inputs.empty() || !call.inputs[0].defined())
    return MakeError(std::string(call.op_type) + ": missing input");
  return OkStatus();
}

// ---- views ------------------------------------------------------------------------------------

// The shared geometry's error (graph/ops/geometry/reshape.h), prefixed with the op.
template <class T>
Expected<T> Named(std::string_view op, Expected<T> result) {
  if (!result.ok()) return MakeError(std::string(op) + ": " + result.error().message);
  return result;
}

// The views that only reshape their input, each registered with its own kind.
enum class ReshapeKind { kReshape, kFlatten, kSqueeze, kUnsqueeze, kIdentity };

Expected<TensorShape> ReshapeTarget(const ForwardCall& call, ReshapeKind kind) {
  const TensorShape& in = call.inputs[0].shape;
  if (kind == ReshapeKind::kIdentity) return in;
  if (kind == ReshapeKind::kFlatten) {
    const int64_t axis = call.attributes ? call.attributes->GetInt("axis", 1) : 1;
    return Named("Flatten", FlattenShape(in, axis));
  }
  if (kind == ReshapeKind::kReshape) {
    MEMPLAN_TRY(
        std::vector<int64_t> target,
        ConstantInts(call.inputs.size() > 1 ? call.inputs[1] : DeviceTensor(), "Reshape", "shape"));
    const bool allow_zero = call.attributes && call.attributes->GetInt("allowzero", 0) != 0;
    MEMPLAN_TRY(ReshapeOutput<int64_t> out,
                Named("Reshape", ReshapeShape(&in, target, allow_zero)));
    return out.dims;
  }
  // Squeeze / Unsqueeze: axes from input 1 (opset 13) or the attribute.
  std::vector<int64_t> axes;
  if (call.inputs.size() > 1 && call.inputs[1].defined()) {
    MEMPLAN_TRY(axes, ConstantInts(call.inputs[1], call.op_type, "axes"));
  } else if (call.attributes) {
    axes = call.attributes->GetInts("axes");
  }
  if (kind == ReshapeKind::kUnsqueeze) return Named("Unsqueeze", UnsqueezeShape(in, axes));
  return Named("Squeeze", SqueezeShape(in, axes));
}

Expected<std::vector<DeviceTensor>> ViewForward(CudaContext& ctx, const ForwardCall& call,
                                                ReshapeKind kind) {
  MEMPLAN_RETURN_IF_ERROR(RequireInput(call));
  MEMPLAN_TRY(TensorShape shape, ReshapeTarget(call, kind));
  const DeviceTensor& x = call.inputs[0];
  if (!call.outputs.empty() && call.outputs[0].defined()) {
    // The program gave the output a buffer of its own: copy into it.
    MEMPLAN_TRY(DeviceTensor out, ForwardOutput(ctx, call, 0, shape, x.dtype));
    MEMPLAN_RETURN_IF_ERROR(
        ctx.Store(StorageOf(x).data(), StorageOf(x).stored_dtype(), out, false));
    return std::vector<DeviceTensor>{out};
  }
  return std::vector<DeviceTensor>{x.View(shape)};
}

Status ViewBackward(CudaContext& ctx, const BackwardCall& call) {
  if (call.grad_outputs.empty() || !call.grad_outputs[0].defined()) return ZeroGradients(ctx, call);
  if (!WantsGradient(call, 0)) return OkStatus();
  const DeviceTensor& dy = call.grad_outputs[0];
  const bool add = !call.accumulate.empty() && call.accumulate[0];
  return ctx.Store(StorageOf(dy).data(), StorageOf(dy).stored_dtype(), call.grad_inputs[0], add);
}

// ---- copies -----------------------------------------------------------------------------------

std::vector<int64_t> TransposePerm(const Attributes* a, size_t rank) {
  std::vector<int64_t> perm = a ? a->GetInts("perm") : std::vector<int64_t>();
  if (perm.empty()) {
    perm.resize(rank);
    std::iota(perm.rbegin(), perm.rend(), 0);
  }
  return perm;
}

Expected<std::vector<DeviceTensor>> TransposeForward(CudaContext& ctx, const ForwardCall& call) {
  MEMPLAN_RETURN_IF_ERROR(RequireInput(call));
  const DeviceTensor& x = call.inputs[0];
  MEMPLAN_TRY(StridedCopyGeometry g,
              TransposeGeometry(x.shape, TransposePerm(call.attributes, x.shape.size())));
  TensorShape out(g.dims, g.dims + g.rank);
  MEMPLAN_TRY(F32Input fx, ctx.ReadF32(x));
  MEMPLAN_TRY(ForwardTarget t, PrepareOutput(ctx, call, 0, out, OutputDType(call, 0, x.dtype)));
  MEMPLAN_RETURN_IF_ERROR(StridedCopy(fx.data, t.out.data(), g, false, ctx.stream()));
  MEMPLAN_RETURN_IF_ERROR(ctx.Commit(t.out));
  return std::vector<DeviceTensor>{t.tensor};
}

Status TransposeBackward(CudaContext& ctx, const BackwardCall& call) {
  if (call.grad_outputs.empty() || !call.grad_outputs[0].defined()) return ZeroGradients(ctx, call);
  if (!WantsGradient(call, 0)) return OkStatus();
  const std::vector<int64_t> perm = TransposePerm(call.attributes, call.input_shapes.at(0).size());
  std::vector<int64_t> inverse(perm.size());
  for (size_t i = 0; i < perm.size(); ++i) {
    const int64_t p = perm[i] < 0 ? perm[i] + static_cast<int64_t>(perm.size()) : perm[i];
    inverse.at(static_cast<size_t>(p)) = static_cast<int64_t>(i);
  }
  const DeviceTensor& dy = call.grad_outputs[0];
  MEMPLAN_TRY(StridedCopyGeometry g, TransposeGeometry(dy.shape, inverse));
  MEMPLAN_TRY(F32Input fdy, ctx.ReadF32(dy));
  MEMPLAN_TRY(F32Output dx, GradientTarget(ctx, call, 0));
  MEMPLAN_RETURN_IF_ERROR(StridedCopy(fdy.data, dx.data(), g, false, ctx.stream()));
  return ctx.Commit(dx);
}

// ONNX Slice semantics per axis (positive steps only).
struct SliceSpec {
  TensorShape starts, steps, dims;
};

Expected<SliceSpec> SliceSpecOf(const std::vector<DeviceTensor>& inputs, const TensorShape& in) {
  MEMPLAN_TRY(std::vector<int64_t> starts, ConstantInts(inputs.at(1), "Slice", "starts"));
  MEMPLAN_TRY(std::vector<int64_t> ends, ConstantInts(inputs.at(2), "Slice", "ends"));
  std::vector<int64_t> axes(starts.size()), steps(starts.size(), 1);
  std::iota(axes.begin(), axes.end(), 0);
  if (inputs.size() > 3 && inputs[3].defined()) {
    MEMPLAN_TRY(axes, ConstantInts(inputs[3], "Slice", "axes"));
  }
  if (inputs.size() > 4 && inputs[4].defined()) {
    MEMPLAN_TRY(steps, ConstantInts(inputs[4], "Slice", "steps"));
  }
  if (ends.size() != starts.size() || axes.size() != starts.size() || steps.size() != starts.size())
    return MakeError("Slice: starts, ends, axes and steps differ in length");
  SliceSpec s{TensorShape(in.size(), 0), TensorShape(in.size(), 1), in};
  for (size_t i = 0; i < starts.size(); ++i) {
    MEMPLAN_TRY(int64_t axis, NormalizeAxis(axes[i], in.size(), "Slice"));
    const auto a = static_cast<size_t>(axis);
    if (steps[i] <= 0) return Unsupported("Slice", "non-positive steps");
    const int64_t d = in[a];
    auto clamp = [d](int64_t v) { return std::clamp<int64_t>(v < 0 ? v + d : v, 0, d); };
    const int64_t b = clamp(starts[i]);
    const int64_t e = clamp(ends[i]);
    s.starts[a] = b;
    s.steps[a] = steps[i];
    s.dims[a] = e > b ? (e - b + steps[i] - 1) / steps[i] : 0;
  }
  return s;
}

Expected<std::vector<DeviceTensor>> SliceForward(CudaContext& ctx, const ForwardCall& call) {
  MEMPLAN_RETURN_IF_ERROR(RequireInput(call));
  if (call.inputs.size() < 3) return MakeError("Slice: needs starts and ends inputs");
  const DeviceTensor& x = call.inputs[0];
  MEMPLAN_TRY(SliceSpec s, SliceSpecOf(call.inputs, x.shape));
  MEMPLAN_TRY(StridedCopyGeometry g, BlockGeometry(x.shape, s.starts, s.steps, s.dims, true));
  MEMPLAN_TRY(F32Input fx, ctx.ReadF32(x));
  MEMPLAN_TRY(ForwardTarget t, PrepareOutput(ctx, call, 0, s.dims, OutputDType(call, 0, x.dtype)));
  MEMPLAN_RETURN_IF_ERROR(StridedCopy(fx.data, t.out.data(), g, false, ctx.stream()));
  MEMPLAN_RETURN_IF_ERROR(ctx.Commit(t.out));
  return std::vector<DeviceTensor>{t.tensor};
}

Status SliceBackward(CudaContext& ctx, const BackwardCall& call) {
  if (call.grad_outputs.empty() || !call.grad_outputs[0].defined()) return ZeroGradients(ctx, call);
  if (!WantsGradient(call, 0)) return OkStatus();
  const TensorShape& in = call.input_shapes.at(0);
  MEMPLAN_TRY(SliceSpec s, SliceSpecOf(call.inputs, in));
  MEMPLAN_TRY(StridedCopyGeometry g, BlockGeometry(in, s.starts, s.steps, s.dims, false));
  MEMPLAN_TRY(F32Input fdy, ctx.ReadF32(call.grad_outputs[0]));
  MEMPLAN_TRY(F32Output dx, GradientTarget(ctx, call, 0));
  MEMPLAN_RETURN_IF_ERROR(Fill(dx.data(), 0.0f, NumElements(in), ctx.stream()));
  MEMPLAN_RETURN_IF_ERROR(StridedCopy(fdy.data, dx.data(), g, false, ctx.stream()));
  return ctx.Commit(dx);
}

// The sizes of Split's outputs along `axis`.
Expected<std::vector<int64_t>> SplitSizes(const Attributes* a,
                                          const std::vector<DeviceTensor>& inputs, int64_t dim,
                                          int num_outputs) {
  std::vector<int64_t> sizes;
  if (inputs.size() > 1 && inputs[1].defined()) {
    MEMPLAN_TRY(sizes, ConstantInts(inputs[1], "Split", "split"));
  } else if (a != nullptr && a->Has("split")) {
    sizes = a->GetInts("split");
  } else {
    if (num_outputs <= 0 || dim % num_outputs != 0)
      return Unsupported("Split", "uneven split without explicit sizes");
    sizes.assign(static_cast<size_t>(num_outputs), dim / num_outputs);
  }
  if (std::accumulate(sizes.begin(), sizes.end(), int64_t{0}) != dim)
    return MakeError("Split: sizes do not add up to the axis");
  return sizes;
}

Expected<std::vector<DeviceTensor>> SplitForward(CudaContext& ctx, const ForwardCall& call) {
  MEMPLAN_RETURN_IF_ERROR(RequireInput(call));
  const DeviceTensor& x = call.inputs[0];
  MEMPLAN_TRY(int64_t axis, NormalizeAxis(call.attributes ? call.attributes->GetInt("axis", 0) : 0,
                                          x.shape.size(), "Split"));
  const auto a = static_cast<size_t>(axis);
  MEMPLAN_TRY(std::vector<int64_t> sizes,
              SplitSizes(call.attributes, call.inputs, x.shape[a], call.num_outputs));
  MEMPLAN_TRY(F32Input fx, ctx.ReadF32(x));
  std::vector<DeviceTensor> outs;
  TensorShape starts(x.shape.size(), 0);
  const TensorShape steps(x.shape.size(), 1);
  for (size_t j = 0; j < sizes.size(); ++j) {
    TensorShape dims = x.shape;
    dims[a] = sizes[j];
    MEMPLAN_TRY(StridedCopyGeometry g, BlockGeometry(x.shape, starts, steps, dims, true));
    MEMPLAN_TRY(ForwardTarget t, PrepareOutput(ctx, call, j, dims, OutputDType(call, j, x.dtype)));
    MEMPLAN_RETURN_IF_ERROR(StridedCopy(fx.data, t.out.data(), g, false, ctx.stream()));
    MEMPLAN_RETURN_IF_ERROR(ctx.Commit(t.out));
    outs.push_back(t.tensor);
    starts[a] += sizes[j];
  }
  return outs;
}

Status SplitBackward(CudaContext& ctx, const BackwardCall& call) {
  if (!WantsGradient(call, 0)) return OkStatus();
  const TensorShape& in = call.input_shapes.at(0);
  MEMPLAN_TRY(int64_t axis, NormalizeAxis(call.attributes ? call.attributes->GetInt("axis", 0) : 0,
                                          in.size(), "Split"));
  const auto a = static_cast<size_t>(axis);
  MEMPLAN_TRY(std::vector<int64_t> sizes, SplitSizes(call.attributes, call.inputs, in[a],
                                                     static_cast<int>(call.grad_outputs.size())));
  MEMPLAN_TRY(F32Output dx, GradientTarget(ctx, call, 0));
  MEMPLAN_RETURN_IF_ERROR(Fill(dx.data(), 0.0f, NumElements(in), ctx.stream()));
  TensorShape starts(in.size(), 0);
  const TensorShape steps(in.size(), 1);
  for (size_t j = 0; j < sizes.size(); ++j) {
    if (j < call.grad_outputs.size() && call.grad_outputs[j].defined()) {
      TensorShape dims = in;
      dims[a] = sizes[j];
      MEMPLAN_TRY(StridedCopyGeometry g, BlockGeometry(in, starts, steps, dims, false));
      MEMPLAN_TRY(F32Input fdy, ctx.ReadF32(call.grad_outputs[j]));
      MEMPLAN_RETURN_IF_ERROR(StridedCopy(fdy.data, dx.data(), g, false, ctx.stream()));
    }
    starts[a] += sizes[j];
  }
  return ctx.Commit(dx);
}

Expected<std::vector<DeviceTensor>> ConcatForward(CudaContext& ctx, const ForwardCall& call) {
  MEMPLAN_RETURN_IF_ERROR(RequireInput(call));
  const TensorShape& first = call.inputs[0].shape;
  MEMPLAN_TRY(int64_t axis, NormalizeAxis(call.attributes ? call.attributes->GetInt("axis", 0) : 0,
                                          first.size(), "Concat"));
  const auto a = static_cast<size_t>(axis);
  TensorShape out = first;
  out[a] = 0;
  for (const DeviceTensor& t : call.inputs) {
    if (!t.defined() || t.shape.size() != first.size())
      return MakeError("Concat: inputs differ in rank");
    out[a] += t.shape[a];
  }
  MEMPLAN_TRY(ForwardTarget target,
              PrepareOutput(ctx, call, 0, out, OutputDType(call, 0, call.inputs[0].dtype)));
  TensorShape starts(out.size(), 0);
  const TensorShape steps(out.size(), 1);
  for (const DeviceTensor& t : call.inputs) {
    MEMPLAN_TRY(StridedCopyGeometry g, BlockGeometry(out, starts, steps, t.shape, false));
    MEMPLAN_TRY(F32Input ft, ctx.ReadF32(t));
    MEMPLAN_RETURN_IF_ERROR(StridedCopy(ft.data, target.out.data(), g, false, ctx.stream()));
    starts[a] += t.shape[a];
  }
  MEMPLAN_RETURN_IF_ERROR(ctx.Commit(target.out));
  return std::vector<DeviceTensor>{target.tensor};
}

Status ConcatBackward(CudaContext& ctx, const BackwardCall& call) {
  if (call.grad_outputs.empty() || !call.grad_outputs[0].defined()) return ZeroGradients(ctx, call);
  const DeviceTensor& dy = call.grad_outputs[0];
  MEMPLAN_TRY(int64_t axis, NormalizeAxis(call.attributes ? call.attributes->GetInt("axis", 0) : 0,
                                          dy.shape.size(), "Concat"));
  const auto a = static_cast<size_t>(axis);
  MEMPLAN_TRY(F32Input fdy, ctx.ReadF32(dy));
  TensorShape starts(dy.shape.size(), 0);
  const TensorShape steps(dy.shape.size(), 1);
  for (size_t i = 0; i < call.input_shapes.size(); ++i) {
    const TensorShape& dims = call.input_shapes[i];
    if (WantsGradient(call, i)) {
      MEMPLAN_TRY(StridedCopyGeometry g, BlockGeometry(dy.shape, starts, steps, dims, true));
      MEMPLAN_TRY(F32Output dx, GradientTarget(ctx, call, i));
      MEMPLAN_RETURN_IF_ERROR(StridedCopy(fdy.data, dx.data(), g, false, ctx.stream()));
      MEMPLAN_RETURN_IF_ERROR(ctx.Commit(dx));
    }
    starts[a] += dims.at(a);
  }
  return OkStatus();
}

Expected<std::vector<DeviceTensor>> ExpandForward(CudaContext& ctx, const ForwardCall& call) {
  MEMPLAN_RETURN_IF_ERROR(RequireInput(call));
  const DeviceTensor& x = call.inputs[0];
  MEMPLAN_TRY(
      std::vector<int64_t> target,
      ConstantInts(call.inputs.size() > 1 ? call.inputs[1] : DeviceTensor(), "Expand", "shape"));
  MEMPLAN_TRY(TensorShape out, BroadcastShapes(x.shape, target));
  MEMPLAN_TRY(StridedCopyGeometry g, ExpandGeometry(x.shape, out));
  MEMPLAN_TRY(F32Input fx, ctx.ReadF32(x));
  MEMPLAN_TRY(ForwardTarget t, PrepareOutput(ctx, call, 0, out, OutputDType(call, 0, x.dtype)));
  MEMPLAN_RETURN_IF_ERROR(StridedCopy(fx.data, t.out.data(), g, false, ctx.stream()));
  MEMPLAN_RETURN_IF_ERROR(ctx.Commit(t.out));
  return std::vector<DeviceTensor>{t.tensor};
}

Status ExpandBackward(CudaContext& ctx, const BackwardCall& call) {
  if (call.grad_outputs.empty() || !call.grad_outputs[0].defined()) return ZeroGradients(ctx, call);
  if (!WantsGradient(call, 0)) return OkStatus();
  const DeviceTensor& dy = call.grad_outputs[0];
  MEMPLAN_TRY(StridedCopyGeometry g, ExpandGeometry(call.input_shapes.at(0), dy.shape));
  // Reverse direction: every output element adds into the input element it was copied from.
  std::swap(g.src_strides, g.dst_strides);
  MEMPLAN_TRY(F32Input fdy, ctx.ReadF32(dy));
  MEMPLAN_TRY(F32Output dx, GradientTarget(ctx, call, 0));
  MEMPLAN_RETURN_IF_ERROR(Fill(dx.data(), 0.0f, call.grad_inputs[0].numel(), ctx.stream()));
  MEMPLAN_RETURN_IF_ERROR(StridedCopy(fdy.data, dx.data(), g, true, ctx.stream()));
  return ctx.Commit(dx);
}

Expected<std::vector<DeviceTensor>> ShapeForward(CudaContext& ctx, const ForwardCall& call) {
  MEMPLAN_RETURN_IF_ERROR(RequireInput(call));
  std::vector<float> dims;
  for (int64_t d : call.inputs[0].shape) dims.push_back(static_cast<float>(d));
  const auto rank = static_cast<int64_t>(dims.size());
  int64_t start = call.attributes ? call.attributes->GetInt("start", 0) : 0;
  int64_t end = call.attributes ? call.attributes->GetInt("end", rank) : rank;
  start = std::clamp<int64_t>(start < 0 ? start + rank : start, 0, rank);
  end = std::clamp<int64_t>(end < 0 ? end + rank : end, 0, rank);
  std::vector<float> kept(dims.begin() + start, dims.begin() + std::max(start, end));
  MEMPLAN_TRY(DeviceTensor t,
              ctx.ConstantTensor({static_cast<int64_t>(kept.size())}, DType::kInt64, kept));
  return std::vector<DeviceTensor>{t};
}

}  // namespace

void RegisterLayoutOps(CudaOpTable& table) {
  const std::pair<const char*, ReshapeKind> reshapes[] = {
      {"Reshape", ReshapeKind::kReshape},   {"Flatten", ReshapeKind::kFlatten},
      {"Squeeze", ReshapeKind::kSqueeze},   {"Unsqueeze", ReshapeKind::kUnsqueeze},
      {"Identity", ReshapeKind::kIdentity},
  };
  for (const auto& reshape : reshapes) {
    const ReshapeKind kind = reshape.second;
    table.Register(
        reshape.first,
        [kind](CudaContext& ctx, const ForwardCall& call) { return ViewForward(ctx, call, kind); },
        ViewBackward);
  }
  table.Register("Transpose", TransposeForward, TransposeBackward);
  table.Register("Slice", SliceForward, SliceBackward);
  table.Register("Split", SplitForward, SplitBackward);
  table.Register("Concat", ConcatForward, ConcatBackward);
  table.Register("Expand", ExpandForward, ExpandBackward);
  table.Register("Shape", ShapeForward, nullptr);
}

}  // namespace memplan::cuda
