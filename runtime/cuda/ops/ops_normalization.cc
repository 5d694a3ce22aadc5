// Softmax (last axis), LayerNormalization (trailing axes), BatchNormalization (training mode).

#include "runtime/cuda/kernels/conv_kernels.h"
#include "runtime/cuda/kernels/cuda_kernels.h"
#include "runtime/cuda/ops/cuda_op_table.h"
#include "runtime/cuda/ops/op_util.h"

namespace memplan::cuda {
namespace {

// A kernel's fp32 scratch or the program's extra buffer (committed afterwards).
struct ExtraTarget {
  F32Output out;
  ScratchBuffer scratch;
  float* data = nullptr;
};

Expected<ExtraTarget> ExtraFor(CudaContext& ctx, const std::map<std::string, DeviceTensor>& extras,
                               const std::string& name, int64_t count) {
  ExtraTarget t;
  auto it = extras.find(name);
  if (it != extras.end() && it->second.defined()) {
    if (it->second.numel() != count)
      return MakeError("extra '" + name + "' has " + std::to_string(it->second.numel()) +
                       " elements, the kernel writes " + std::to_string(count));
    MEMPLAN_TRY(t.out, ctx.WriteF32(it->second, false));
    t.data = t.out.data();
  } else {
    MEMPLAN_TRY(t.scratch, ctx.ScratchF32(count));
    t.data = t.scratch.f32();
  }
  return t;
}

Status CommitExtra(CudaContext& ctx, ExtraTarget& t) {
  return t.out.defined() ? ctx.Commit(t.out) : OkStatus();
}

Expected<F32Input> SavedExtra(CudaContext& ctx, const BackwardCall& call, const std::string& name) {
  auto it = call.extras.find(name);
  if (it == call.extras.end() || !it->second.defined())
    return MakeError(std::string(call.op_type) + " backward: the saved '" + name + "' is missing");
  return ctx.ReadF32(it->second);
}

// What LayerNormalization and BatchNormalization backward read and write: X (input 0) and its
// scale (input 1), the forward's saved mean and 1/std, dY, and the gradient targets of X, the
// scale and the bias.
struct NormBackwardOperands {
  F32Input mean, invstd, x, scale, dy;
  F32Output dx, dscale, dbias;
};

Expected<NormBackwardOperands> ReadNormBackwardOperands(CudaContext& ctx,
                                                        const BackwardCall& call) {
  NormBackwardOperands o;
  MEMPLAN_TRY(o.mean, SavedExtra(ctx, call, "mean"));
  MEMPLAN_TRY(o.invstd, SavedExtra(ctx, call, "invstd"));
  MEMPLAN_TRY(o.x, ctx.ReadF32(call.inputs[0]));
  MEMPLAN_TRY(o.scale, ctx.ReadF32(call.inputs[1]));
  MEMPLAN_TRY(o.dy, ctx.ReadF32(call.grad_outputs[0]));
  MEMPLAN_TRY(o.dx, GradientTarget(ctx, call, 0));
  MEMPLAN_TRY(o.dscale, GradientTarget(ctx, call, 1));
  MEMPLAN_TRY(o.dbias, GradientTarget(ctx, call, 2));
  return o;
}

// Commits the gradients the backward call asked for (a target is undefined where it did not).
Status CommitNormGradients(CudaContext& ctx, NormBackwardOperands& o) {
  for (F32Output* out : {&o.dx, &o.dscale, &o.dbias})
    if (out->defined()) MEMPLAN_RETURN_IF_ERROR(ctx.Commit(*out));
  return OkStatus();
}

// ---- Softmax ----------------------------------------------------------------------------------

Status RequireLastAxis(const Attributes* a, size_t rank, std::string_view op) {
  MEMPLAN_TRY(int64_t axis, NormalizeAxis(a ? a->GetInt("axis", -1) : -1, rank, op));
  if (axis != static_cast<int64_t>(rank) - 1) return Unsupported(op, "an axis other than the last");
  return OkStatus();
}

Expected<std::vector<DeviceTensor>> SoftmaxForwardOp(CudaContext& ctx, const ForwardCall& call) {
  if (call.inputs.empty() || !call.inputs[0].defined()) return MakeError("Softmax: no input");
  const DeviceTensor& x = call.inputs[0];
  if (x.shape.empty()) return Unsupported("Softmax", "a scalar input");
  MEMPLAN_RETURN_IF_ERROR(RequireLastAxis(call.attributes, x.shape.size(), "Softmax"));
  const int64_t cols = x.shape.back();
  MEMPLAN_TRY(F32Input fx, ctx.ReadF32(x));
  MEMPLAN_TRY(ForwardTarget t, PrepareOutput(ctx, call, 0, x.shape, OutputDType(call, 0, x.dtype)));
  MEMPLAN_RETURN_IF_ERROR(
      SoftmaxForward(fx.data, t.out.data(), x.numel() / cols, cols, ctx.stream()));
  MEMPLAN_RETURN_IF_ERROR(ctx.Commit(t.out));
  return std::vector<DeviceTensor>{t.tensor};
}

Status SoftmaxBackwardOp(CudaContext& ctx, const BackwardCall& call) {
  if (call.grad_outputs.empty() || !call.grad_outputs[0].defined()) return ZeroGradients(ctx, call);
  if (!WantsGradient(call, 0)) return OkStatus();
  if (call.outputs.empty() || !call.outputs[0].defined())
    return MakeError("Softmax backward: the output was not saved");
  const DeviceTensor& y = call.outputs[0];
  const int64_t cols = y.shape.back();
  MEMPLAN_TRY(F32Input fy, ctx.ReadF32(y));
  MEMPLAN_TRY(F32Input dy, ctx.ReadF32(call.grad_outputs[0]));
  MEMPLAN_TRY(F32Output dx, GradientTarget(ctx, call, 0));
  MEMPLAN_RETURN_IF_ERROR(
      SoftmaxBackward(fy.data, dy.data, dx.data(), y.numel() / cols, cols, ctx.stream()));
  return ctx.Commit(dx);
}

// ---- LayerNormalization -----------------------------------------------------------------------

struct RowsCols {
  int64_t rows = 1, cols = 1;
};

Expected<RowsCols> LayerNormLayout(const Attributes* a, const TensorShape& shape) {
  MEMPLAN_TRY(int64_t axis,
              NormalizeAxis(a ? a->GetInt("axis", -1) : -1, shape.size(), "LayerNormalization"));
  RowsCols rc;
  for (size_t i = 0; i < shape.size(); ++i)
    (static_cast<int64_t>(i) < axis ? rc.rows : rc.cols) *= shape[i];
  return rc;
}

Expected<std::vector<DeviceTensor>> LayerNormForwardOp(CudaContext& ctx, const ForwardCall& call) {
  if (call.inputs.size() < 2 || !call.inputs[0].defined() || !call.inputs[1].defined())
    return MakeError("LayerNormalization: needs X and Scale");
  const DeviceTensor& x = call.inputs[0];
  MEMPLAN_TRY(RowsCols rc, LayerNormLayout(call.attributes, x.shape));
  const auto eps =
      static_cast<float>(call.attributes ? call.attributes->GetFloat("epsilon", 1e-5) : 1e-5);
  MEMPLAN_TRY(F32Input fx, ctx.ReadF32(x));
  MEMPLAN_TRY(F32Input gamma, ctx.ReadF32(call.inputs[1]));
  MEMPLAN_TRY(F32Input beta, ctx.ReadF32(call.inputs.size() > 2 ? call.inputs[2] : DeviceTensor()));
  MEMPLAN_TRY(ForwardTarget t, PrepareOutput(ctx, call, 0, x.shape, OutputDType(call, 0, x.dtype)));
  MEMPLAN_TRY(ExtraTarget mean, ExtraFor(ctx, call.extras, "mean", rc.rows));
  MEMPLAN_TRY(ExtraTarget invstd, ExtraFor(ctx, call.extras, "invstd", rc.rows));
  MEMPLAN_RETURN_IF_ERROR(LayerNormForward(fx.data, gamma.data, beta.data, eps, t.out.data(),
                                           mean.data, invstd.data, rc.rows, rc.cols, ctx.stream()));
  MEMPLAN_RETURN_IF_ERROR(ctx.Commit(t.out));
  std::vector<DeviceTensor> outs{t.tensor};
  // Optional outputs Mean and InvStdDev: [rows] reshaped like X with the normalized dims as 1.
  for (size_t j = 1; j < static_cast<size_t>(call.num_outputs) && j < 3; ++j) {
    TensorShape stat_shape = x.shape;
    for (size_t i = stat_shape.size(); i-- > 0 && NumElements(stat_shape) > rc.rows;)
      stat_shape[i] = 1;
    MEMPLAN_TRY(DeviceTensor out, ForwardOutput(ctx, call, j, stat_shape, DType::kFloat32));
    MEMPLAN_RETURN_IF_ERROR(
        ctx.Store(j == 1 ? mean.data : invstd.data, DType::kFloat32, out, false));
    outs.push_back(out);
  }
  MEMPLAN_RETURN_IF_ERROR(CommitExtra(ctx, mean));
  MEMPLAN_RETURN_IF_ERROR(CommitExtra(ctx, invstd));
  return outs;
}

Status LayerNormBackwardOp(CudaContext& ctx, const BackwardCall& call) {
  if (call.grad_outputs.empty() || !call.grad_outputs[0].defined()) return ZeroGradients(ctx, call);
  if (call.inputs.size() < 2 || !call.inputs[0].defined() || !call.inputs[1].defined())
    return MakeError("LayerNormalization backward: X and Scale were not saved");
  MEMPLAN_TRY(RowsCols rc, LayerNormLayout(call.attributes, call.input_shapes.at(0)));
  MEMPLAN_TRY(NormBackwardOperands o, ReadNormBackwardOperands(ctx, call));
  MEMPLAN_RETURN_IF_ERROR(LayerNormBackward(o.x.data, o.scale.data, o.mean.data, o.invstd.data,
                                            o.dy.data, o.dx.data(), o.dscale.data(), o.dbias.data(),
                                            rc.rows, rc.cols, ctx.stream()));
  return CommitNormGradients(ctx, o);
}

// ---- BatchNormalization -----------------------------------------------------------------------

struct BatchLayout {
  int64_t n = 0, c = 0, spatial = 1;
};

Expected<BatchLayout> BatchNormLayout(const TensorShape& x) {
  if (x.size() < 2) return MakeError("BatchNormalization: X needs at least 2 dims");
  BatchLayout l{x[0], x[1], 1};
  for (size_t i = 2; i < x.size(); ++i) l.spatial *= x[i];
  return l;
}

Expected<std::vector<DeviceTensor>> BatchNormForwardOp(CudaContext& ctx, const ForwardCall& call) {
  if (call.inputs.size() < 5) return MakeError("BatchNormalization: needs 5 inputs");
  for (const DeviceTensor& t : call.inputs)
    if (!t.defined()) return MakeError("BatchNormalization: an input is missing");
  if (!call.training)
    return Unsupported("BatchNormalization", "inference mode (the executor trains)");
  const DeviceTensor& x = call.inputs[0];
  MEMPLAN_TRY(BatchLayout l, BatchNormLayout(x.shape));
  const Attributes* a = call.attributes;
  const auto eps = static_cast<float>(a ? a->GetFloat("epsilon", 1e-5) : 1e-5);
  const auto momentum = static_cast<float>(a ? a->GetFloat("momentum", 0.9) : 0.9);
  MEMPLAN_TRY(F32Input fx, ctx.ReadF32(x));
  MEMPLAN_TRY(F32Input scale, ctx.ReadF32(call.inputs[1]));
  MEMPLAN_TRY(F32Input bias, ctx.ReadF32(call.inputs[2]));
  MEMPLAN_TRY(ForwardTarget t, PrepareOutput(ctx, call, 0, x.shape, OutputDType(call, 0, x.dtype)));
  MEMPLAN_TRY(ExtraTarget mean, ExtraFor(ctx, call.extras, "mean", l.c));
  MEMPLAN_TRY(ExtraTarget invstd, ExtraFor(ctx, call.extras, "invstd", l.c));
  MEMPLAN_RETURN_IF_ERROR(BatchNormForward(fx.data, scale.data, bias.data, eps, l.n, l.c, l.spatial,
                                           t.out.data(), mean.data, invstd.data, ctx.stream()));
  MEMPLAN_RETURN_IF_ERROR(ctx.Commit(t.out));
  std::vector<DeviceTensor> outs{t.tensor};
  if (call.num_outputs >= 3) {
    MEMPLAN_TRY(F32Input in_mean, ctx.ReadF32(call.inputs[3]));
    MEMPLAN_TRY(F32Input in_var, ctx.ReadF32(call.inputs[4]));
    MEMPLAN_TRY(ForwardTarget new_mean,
                PrepareOutput(ctx, call, 1, {l.c}, OutputDType(call, 1, call.inputs[3].dtype)));
    MEMPLAN_TRY(ForwardTarget new_var,
                PrepareOutput(ctx, call, 2, {l.c}, OutputDType(call, 2, call.inputs[4].dtype)));
    MEMPLAN_RETURN_IF_ERROR(BatchNormRunningUpdate(
        mean.data, invstd.data, eps, l.n * l.spatial, momentum, in_mean.data, in_var.data,
        new_mean.out.data(), new_var.out.data(), l.c, ctx.stream()));
    MEMPLAN_RETURN_IF_ERROR(ctx.Commit(new_mean.out));
    MEMPLAN_RETURN_IF_ERROR(ctx.Commit(new_var.out));
    outs.push_back(new_mean.tensor);
    outs.push_back(new_var.tensor);
  }
  MEMPLAN_RETURN_IF_ERROR(CommitExtra(ctx, mean));
  MEMPLAN_RETURN_IF_ERROR(CommitExtra(ctx, invstd));
  return outs;
}

Status BatchNormBackwardOp(CudaContext& ctx, const BackwardCall& call) {
  if (call.grad_outputs.empty() || !call.grad_outputs[0].defined()) return ZeroGradients(ctx, call);
  if (call.inputs.size() < 2 || !call.inputs[0].defined() || !call.inputs[1].defined())
    return MakeError("BatchNormalization backward: X and scale were not saved");
  MEMPLAN_TRY(BatchLayout l, BatchNormLayout(call.input_shapes.at(0)));
  MEMPLAN_TRY(NormBackwardOperands o, ReadNormBackwardOperands(ctx, call));
  MEMPLAN_RETURN_IF_ERROR(BatchNormBackward(o.x.data, o.scale.data, o.mean.data, o.invstd.data,
                                            o.dy.data, l.n, l.c, l.spatial, o.dx.data(),
                                            o.dscale.data(), o.dbias.data(), ctx.stream()));
  return CommitNormGradients(ctx, o);
}

}  // namespace

void RegisterNormalizationOps(CudaOpTable& table) {
  table.Register("Softmax", SoftmaxForwardOp, SoftmaxBackwardOp);
  table.Register("LayerNormalization", LayerNormForwardOp, LayerNormBackwardOp);
  table.Register("BatchNormalization", BatchNormForwardOp, BatchNormBackwardOp);
}

}  // namespace memplan::cuda
