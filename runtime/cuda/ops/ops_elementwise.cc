// Add, Sub, Mul, Div and the comparisons (numpy broadcasting), Relu, Gelu, Sigmoid, Tanh, Erf,
// Not, Where, Cast.

#include <optional>

#include "runtime/cuda/kernels/cuda_kernels.h"
#include "runtime/cuda/kernels/layout_kernels.h"
#include "runtime/cuda/ops/cuda_op_table.h"
#include "runtime/cuda/ops/op_util.h"

namespace memplan::cuda {
namespace {

Status RequireInputs(const ForwardCall& call, size_t n) {
  for (size_t i = 0; i < n; ++i)
    if (i >= call.inputs.size() || !call.inputs[i].defined())
      return MakeError(std::string(call.op_type) + ": input " + std::to_string(i) + " missing");
  return OkStatus();
}

Expected<std::vector<DeviceTensor>> BinaryForwardOp(CudaContext& ctx, const ForwardCall& call,
                                                    BinaryOp op) {
  MEMPLAN_RETURN_IF_ERROR(RequireInputs(call, 2));
  const DeviceTensor& a = call.inputs[0];
  const DeviceTensor& b = call.inputs[1];
  MEMPLAN_TRY(TensorShape out_shape, BroadcastShapes(a.shape, b.shape));
  MEMPLAN_TRY(F32Input fa, ctx.ReadF32(a));
  MEMPLAN_TRY(F32Input fb, ctx.ReadF32(b));
  const bool compares = op >= BinaryOp::kEqual;
  MEMPLAN_TRY(ForwardTarget t,
              PrepareOutput(ctx, call, 0, out_shape,
                            OutputDType(call, 0, compares ? DType::kBool : a.dtype)));
  MEMPLAN_RETURN_IF_ERROR(
      BinaryForward(op, fa.data, a.shape, fb.data, b.shape, t.out.data(), ctx.stream()));
  MEMPLAN_RETURN_IF_ERROR(ctx.Commit(t.out));
  return std::vector<DeviceTensor>{t.tensor};
}

Status BinaryBackwardOp(CudaContext& ctx, const BackwardCall& call, BinaryOp op) {
  if (call.grad_outputs.empty() || !call.grad_outputs[0].defined()) return ZeroGradients(ctx, call);
  // What derivatives.yaml saves, and so the program: Mul's gradient for one operand reads the
  // other; Div's for a reads b, for b reads both.
  const bool want_a = WantsGradient(call, 0);
  const bool want_b = WantsGradient(call, 1);
  const bool needs_a = (op == BinaryOp::kMul || op == BinaryOp::kDiv) && want_b;
  const bool needs_b =
      (op == BinaryOp::kMul && want_a) || (op == BinaryOp::kDiv && (want_a || want_b));
  auto saved = [&](size_t i) -> Status {
    if (call.inputs.size() > i && call.inputs[i].defined()) return OkStatus();
    return MakeError(std::string(call.op_type) + " backward: its saved input " + std::to_string(i) +
                     " is missing");
  };
  F32Input fa, fb;
  if (needs_a) {
    MEMPLAN_RETURN_IF_ERROR(saved(0));
    MEMPLAN_TRY(fa, ctx.ReadF32(call.inputs[0]));
  }
  if (needs_b) {
    MEMPLAN_RETURN_IF_ERROR(saved(1));
    MEMPLAN_TRY(fb, ctx.ReadF32(call.inputs[1]));
  }
  MEMPLAN_TRY(F32Input dy, ctx.ReadF32(call.grad_outputs[0]));
  MEMPLAN_TRY(F32Output da, GradientTarget(ctx, call, 0));
  MEMPLAN_TRY(F32Output db, GradientTarget(ctx, call, 1));
  MEMPLAN_RETURN_IF_ERROR(BinaryBackward(op, fa.data, call.input_shapes.at(0), fb.data,
                                         call.input_shapes.at(1), dy.data, da.data(), db.data(),
                                         ctx.stream()));
  if (da.defined()) MEMPLAN_RETURN_IF_ERROR(ctx.Commit(da));
  if (db.defined()) MEMPLAN_RETURN_IF_ERROR(ctx.Commit(db));
  return OkStatus();
}

Expected<std::vector<DeviceTensor>> UnaryForwardOp(CudaContext& ctx, const ForwardCall& call,
                                                   UnaryOp op) {
  MEMPLAN_RETURN_IF_ERROR(RequireInputs(call, 1));
  const DeviceTensor& x = call.inputs[0];
  if (op == UnaryOp::kGelu && call.attributes != nullptr &&
      call.attributes->GetString("approximate", "none") != "none")
    return Unsupported("Gelu", "approximate='tanh' (only the exact erf form has a kernel)");
  MEMPLAN_TRY(F32Input fx, ctx.ReadF32(x));
  MEMPLAN_TRY(ForwardTarget t, PrepareOutput(ctx, call, 0, x.shape, OutputDType(call, 0, x.dtype)));
  MEMPLAN_RETURN_IF_ERROR(UnaryForward(op, fx.data, t.out.data(), x.numel(), ctx.stream()));
  MEMPLAN_RETURN_IF_ERROR(ctx.Commit(t.out));
  return std::vector<DeviceTensor>{t.tensor};
}

Status UnaryBackwardOp(CudaContext& ctx, const BackwardCall& call, UnaryOp op) {
  if (call.grad_outputs.empty() || !call.grad_outputs[0].defined()) return ZeroGradients(ctx, call);
  if (!WantsGradient(call, 0)) return OkStatus();
  const bool reads_output = UnaryBackwardReadsOutput(op);
  const DeviceTensor& saved = reads_output
                                  ? (call.outputs.empty() ? DeviceTensor() : call.outputs[0])
                                  : (call.inputs.empty() ? DeviceTensor() : call.inputs[0]);
  if (!saved.defined())
    return MakeError(std::string(call.op_type) + " backward: its saved " +
                     (reads_output ? "output" : "input") + " is missing");
  MEMPLAN_TRY(F32Input fs, ctx.ReadF32(saved));
  MEMPLAN_TRY(F32Input dy, ctx.ReadF32(call.grad_outputs[0]));
  MEMPLAN_TRY(F32Output dx, GradientTarget(ctx, call, 0));
  MEMPLAN_RETURN_IF_ERROR(UnaryBackward(op, reads_output ? nullptr : fs.data,
                                        reads_output ? fs.data : nullptr, dy.data, dx.data(),
                                        call.grad_inputs[0].numel(), ctx.stream()));
  return ctx.Commit(dx);
}

Expected<std::vector<DeviceTensor>> WhereForwardOp(CudaContext& ctx, const ForwardCall& call) {
  MEMPLAN_RETURN_IF_ERROR(RequireInputs(call, 3));
  TensorShape out_shape;
  MEMPLAN_TRY(WhereGeometry g, MakeWhereGeometry(call.inputs[0].shape, call.inputs[1].shape,
                                                 call.inputs[2].shape, out_shape));
  MEMPLAN_TRY(F32Input c, ctx.ReadF32(call.inputs[0]));
  MEMPLAN_TRY(F32Input x, ctx.ReadF32(call.inputs[1]));
  MEMPLAN_TRY(F32Input y, ctx.ReadF32(call.inputs[2]));
  MEMPLAN_TRY(ForwardTarget t,
              PrepareOutput(ctx, call, 0, out_shape, OutputDType(call, 0, call.inputs[1].dtype)));
  MEMPLAN_RETURN_IF_ERROR(WhereForward(c.data, x.data, y.data, t.out.data(), g, ctx.stream()));
  MEMPLAN_RETURN_IF_ERROR(ctx.Commit(t.out));
  return std::vector<DeviceTensor>{t.tensor};
}

Status WhereBackwardOp(CudaContext& ctx, const BackwardCall& call) {
  if (call.grad_outputs.empty() || !call.grad_outputs[0].defined()) return ZeroGradients(ctx, call);
  if (call.inputs.empty() || !call.inputs[0].defined())
    return MakeError("Where backward: the condition was not saved");
  TensorShape out_shape;
  MEMPLAN_TRY(WhereGeometry g, MakeWhereGeometry(call.input_shapes.at(0), call.input_shapes.at(1),
                                                 call.input_shapes.at(2), out_shape));
  MEMPLAN_TRY(F32Input c, ctx.ReadF32(call.inputs[0]));
  MEMPLAN_TRY(F32Input dy, ctx.ReadF32(call.grad_outputs[0]));
  MEMPLAN_TRY(F32Output dx, GradientTarget(ctx, call, 1));
  MEMPLAN_TRY(F32Output dz, GradientTarget(ctx, call, 2));
  // The kernel adds into its destinations.
  if (dx.defined())
    MEMPLAN_RETURN_IF_ERROR(Fill(dx.data(), 0.0f, call.grad_inputs[1].numel(), ctx.stream()));
  if (dz.defined())
    MEMPLAN_RETURN_IF_ERROR(Fill(dz.data(), 0.0f, call.grad_inputs[2].numel(), ctx.stream()));
  MEMPLAN_RETURN_IF_ERROR(WhereBackward(c.data, dy.data, dx.data(), dz.data(), g, ctx.stream()));
  if (dx.defined()) MEMPLAN_RETURN_IF_ERROR(ctx.Commit(dx));
  if (dz.defined()) MEMPLAN_RETURN_IF_ERROR(ctx.Commit(dz));
  return OkStatus();
}

bool IsFloat(DType d) {
  return d == DType::kFloat32 || d == DType::kFloat16 || d == DType::kBFloat16;
}

Expected<std::vector<DeviceTensor>> CastForwardOp(CudaContext& ctx, const ForwardCall& call) {
  MEMPLAN_RETURN_IF_ERROR(RequireInputs(call, 1));
  const DeviceTensor& x = call.inputs[0];
  const std::optional<DType> to =
      call.attributes != nullptr
          ? DTypeFromOnnx(static_cast<int32_t>(call.attributes->GetInt("to", 0)))
          : std::nullopt;
  if (!to) return MakeError("Cast: missing or unknown 'to' dtype");
  const DType out_dtype = OutputDType(call, 0, *to);
  // Integers are stored as fp32 holding integers; a float -> integer cast would need truncation.
  if (IsFloat(x.dtype) && !IsFloat(out_dtype))
    return Unsupported("Cast", "float to integer on the device");
  MEMPLAN_TRY(F32Input fx, ctx.ReadF32(x));
  MEMPLAN_TRY(ForwardTarget t, PrepareOutput(ctx, call, 0, x.shape, out_dtype));
  MEMPLAN_RETURN_IF_ERROR(Axpby(1.0f, fx.data, 0.0f, t.out.data(), x.numel(), ctx.stream()));
  MEMPLAN_RETURN_IF_ERROR(ctx.Commit(t.out));
  return std::vector<DeviceTensor>{t.tensor};
}

Status CastBackwardOp(CudaContext& ctx, const BackwardCall& call) {
  if (call.grad_outputs.empty() || !call.grad_outputs[0].defined()) return ZeroGradients(ctx, call);
  if (!WantsGradient(call, 0)) return OkStatus();
  MEMPLAN_TRY(F32Input dy, ctx.ReadF32(call.grad_outputs[0]));
  MEMPLAN_TRY(F32Output dx, GradientTarget(ctx, call, 0));
  MEMPLAN_RETURN_IF_ERROR(
      Axpby(1.0f, dy.data, 0.0f, dx.data(), call.grad_inputs[0].numel(), ctx.stream()));
  return ctx.Commit(dx);
}

// The registry op each kernel computes, with whether it has a backward: no gradient flows
// through a comparison or Not, so the program emits no backward step for them.
struct BinaryEntry {
  const char* op_type;
  BinaryOp op;
  bool differentiable;
};
struct UnaryEntry {
  const char* op_type;
  UnaryOp op;
  bool differentiable;
};
constexpr BinaryEntry kBinaryOps[] = {
    {"Add", BinaryOp::kAdd, true},
    {"Sub", BinaryOp::kSub, true},
    {"Mul", BinaryOp::kMul, true},
    {"Div", BinaryOp::kDiv, true},
    {"Equal", BinaryOp::kEqual, false},
    {"Less", BinaryOp::kLess, false},
    {"LessOrEqual", BinaryOp::kLessOrEqual, false},
    {"Greater", BinaryOp::kGreater, false},
    {"GreaterOrEqual", BinaryOp::kGreaterOrEqual, false},
};
constexpr UnaryEntry kUnaryOps[] = {
    {"Relu", UnaryOp::kRelu, true},       {"Gelu", UnaryOp::kGelu, true},
    {"Sigmoid", UnaryOp::kSigmoid, true}, {"Tanh", UnaryOp::kTanh, true},
    {"Erf", UnaryOp::kErf, true},         {"Not", UnaryOp::kNot, false},
};

}  // namespace

void RegisterElementwiseOps(CudaOpTable& table) {
  for (const BinaryEntry& e : kBinaryOps) {
    const BinaryOp op = e.op;
    CudaBackwardFn backward;
    if (e.differentiable)
      backward = [op](CudaContext& ctx, const BackwardCall& call) {
        return BinaryBackwardOp(ctx, call, op);
      };
    table.Register(
        e.op_type,
        [op](CudaContext& ctx, const ForwardCall& call) { return BinaryForwardOp(ctx, call, op); },
        std::move(backward));
  }
  for (const UnaryEntry& e : kUnaryOps) {
    const UnaryOp op = e.op;
    CudaBackwardFn backward;
    if (e.differentiable)
      backward = [op](CudaContext& ctx, const BackwardCall& call) {
        return UnaryBackwardOp(ctx, call, op);
      };
    table.Register(
        e.op_type,
        [op](CudaContext& ctx, const ForwardCall& call) { return UnaryForwardOp(ctx, call, op); },
        std::move(backward));
  }
  table.Register("Where", WhereForwardOp, WhereBackwardOp);
  table.Register("Cast", CastForwardOp, CastBackwardOp);
}

}  // namespace memplan::cuda
