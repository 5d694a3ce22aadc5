// MatMul and Gemm on cuBLAS (runtime/cuda/gemm.h). They run in the operands' own dtype when both
// are stored alike (fp16/bf16 on tensor cores with fp32 accumulation, fp32 without TF32), else in
// fp32; results are rounded into the destination's dtype.
//
// MatMul batching: ONNX broadcasts the leading (batch) dims. Three layouts cover the zoo models
// and map onto one cuBLAS call each: B without batch (activations [.., M, K] x weight [K, N]:
// the batch folds into M), A without batch (stride 0), or equal batch dims. Other broadcasts are
// reported as unsupported.

#include "runtime/cuda/cuda_storage.h"
#include "runtime/cuda/gemm.h"
#include "runtime/cuda/kernels/cuda_kernels.h"
#include "runtime/cuda/kernels/layout_kernels.h"
#include "runtime/cuda/ops/cuda_op_table.h"
#include "runtime/cuda/ops/op_util.h"

namespace memplan::cuda {
namespace {

DType ComputeDType(const DeviceTensor& a, const DeviceTensor& b) {
  const DType da = StorageOf(a).stored_dtype();
  return da == StorageOf(b).stored_dtype() ? da : DType::kFloat32;
}

// A GEMM operand in the compute dtype (the buffer itself, or a converted copy).
struct Operand {
  const char* data = nullptr;
  ScratchBuffer staging;
};

Expected<Operand> OperandIn(CudaContext& ctx, const DeviceTensor& t, DType ct) {
  Operand op;
  const CudaStorage& s = StorageOf(t);
  if (s.stored_dtype() == ct) {
    op.data = static_cast<const char*>(s.data());
    return op;
  }
  MEMPLAN_TRY(op.staging, ctx.Scratch(t.numel() * ByteSize(ct)));
  MEMPLAN_RETURN_IF_ERROR(
      CastBuffer(s.data(), s.stored_dtype(), op.staging.data(), ct, t.numel(), ctx.stream()));
  op.data = static_cast<const char*>(op.staging.data());
  return op;
}

// A GEMM result in the compute dtype; Finish() stores it into the destination.
struct Result {
  char* data = nullptr;
  ScratchBuffer staging;
  DeviceTensor destination;
  bool accumulate = false;
};

Expected<Result> ResultIn(CudaContext& ctx, const DeviceTensor& dest, DType ct, bool accumulate) {
  Result r;
  r.destination = dest;
  r.accumulate = accumulate;
  const CudaStorage& s = StorageOf(dest);
  if (s.stored_dtype() == ct && !accumulate) {
    r.data = static_cast<char*>(s.data());
    return r;
  }
  MEMPLAN_TRY(r.staging, ctx.Scratch(dest.numel() * ByteSize(ct)));
  r.data = static_cast<char*>(r.staging.data());
  return r;
}

Status Finish(CudaContext& ctx, Result& r, DType ct) {
  if (r.staging.data() == nullptr) return OkStatus();
  return ctx.Store(r.staging.data(), ct, r.destination, r.accumulate);
}

bool Accumulates(const BackwardCall& call, size_t i) {
  return i < call.accumulate.size() && call.accumulate[i];
}

// ---- MatMul -----------------------------------------------------------------------------------

enum class Batching : uint8_t { kFoldIntoM, kBroadcastA, kEqual };

struct MatMulPlan {
  Batching batching = Batching::kFoldIntoM;
  int64_t batch = 1;  // batch count (1 when folded)
  int64_t m = 0, n = 0, k = 0;
  TensorShape out;
};

int64_t Product(const TensorShape& s, size_t end) {
  int64_t p = 1;
  for (size_t i = 0; i < end; ++i) p *= s[i];
  return p;
}

Expected<MatMulPlan> PlanMatMul(const TensorShape& a, const TensorShape& b) {
  if (a.size() < 2 || b.size() < 2) return Unsupported("MatMul", "rank-1 operands");
  MatMulPlan p;
  p.m = a[a.size() - 2];
  p.k = a.back();
  p.n = b.back();
  if (b[b.size() - 2] != p.k)
    return MakeError("MatMul: inner dims differ: " + ShapeToString(a) + " x " + ShapeToString(b));
  const TensorShape batch_a(a.begin(), a.end() - 2);
  const TensorShape batch_b(b.begin(), b.end() - 2);
  MEMPLAN_TRY(p.out, BroadcastShapes(batch_a, batch_b));
  p.out.push_back(p.m);
  p.out.push_back(p.n);
  const int64_t count_a = Product(a, a.size() - 2);
  const int64_t count_b = Product(b, b.size() - 2);
  if (count_b == 1) {
    p.batching = Batching::kFoldIntoM;
    p.m *= count_a;
  } else if (count_a == 1) {
    p.batching = Batching::kBroadcastA;
    p.batch = count_b;
  } else if (batch_a == batch_b) {
    p.batching = Batching::kEqual;
    p.batch = count_a;
  } else {
    return Unsupported("MatMul", "batch broadcast " + ShapeToString(a) + " x " + ShapeToString(b));
  }
  return p;
}

Expected<std::vector<DeviceTensor>> MatMulForward(CudaContext& ctx, const ForwardCall& call) {
  if (call.inputs.size() < 2 || !call.inputs[0].defined() || !call.inputs[1].defined())
    return MakeError("MatMul: needs two inputs");
  const DeviceTensor& a = call.inputs[0];
  const DeviceTensor& b = call.inputs[1];
  MEMPLAN_TRY(MatMulPlan p, PlanMatMul(a.shape, b.shape));
  const DType ct = ComputeDType(a, b);
  MEMPLAN_TRY(DeviceTensor out, ForwardOutput(ctx, call, 0, p.out, OutputDType(call, 0, a.dtype)));
  MEMPLAN_TRY(Operand oa, OperandIn(ctx, a, ct));
  MEMPLAN_TRY(Operand ob, OperandIn(ctx, b, ct));
  MEMPLAN_TRY(Result r, ResultIn(ctx, out, ct, false));
  GemmShape g{p.m, p.n, p.k, false, false, p.batch, 0, 0, 0};
  g.stride_a = p.batching == Batching::kEqual ? p.m * p.k : 0;
  g.stride_b = p.batching == Batching::kFoldIntoM ? 0 : p.k * p.n;
  g.stride_c = p.m * p.n;
  MEMPLAN_RETURN_IF_ERROR(Gemm(ctx.blas(), g, ct, 1.0f, oa.data, ob.data, 0.0f, r.data));
  MEMPLAN_RETURN_IF_ERROR(Finish(ctx, r, ct));
  return std::vector<DeviceTensor>{out};
}

Status MatMulBackward(CudaContext& ctx, const BackwardCall& call) {
  if (call.grad_outputs.empty() || !call.grad_outputs[0].defined()) return ZeroGradients(ctx, call);
  const bool want_a = WantsGradient(call, 0);
  const bool want_b = WantsGradient(call, 1);
  if ((want_a && (call.inputs.size() < 2 || !call.inputs[1].defined())) ||
      (want_b && !call.inputs[0].defined()))
    return MakeError("MatMul backward: the inputs it needs were not saved");
  MEMPLAN_TRY(MatMulPlan p, PlanMatMul(call.input_shapes.at(0), call.input_shapes.at(1)));
  const DeviceTensor& dy = call.grad_outputs[0];
  // The compute dtype follows the saved operands (dY is converted to it).
  const DeviceTensor& other = want_a ? call.inputs[1] : call.inputs[0];
  const DType ct = ComputeDType(other, dy);
  MEMPLAN_TRY(Operand gy, OperandIn(ctx, dy, ct));
  const int64_t esize = ByteSize(ct);
  if (want_a) {
    MEMPLAN_TRY(Operand ob, OperandIn(ctx, call.inputs[1], ct));
    MEMPLAN_TRY(Result r, ResultIn(ctx, call.grad_inputs[0], ct, Accumulates(call, 0)));
    if (p.batching == Batching::kBroadcastA) {
      // dA = sum_b dY_b B_b^T: one GEMM per batch entry, the later ones adding (beta 1).
      for (int64_t i = 0; i < p.batch; ++i) {
        GemmShape g{p.m, p.k, p.n, false, true, 1, 0, 0, 0};
        MEMPLAN_RETURN_IF_ERROR(Gemm(ctx.blas(), g, ct, 1.0f, gy.data + i * p.m * p.n * esize,
                                     ob.data + i * p.k * p.n * esize, i == 0 ? 0.0f : 1.0f,
                                     r.data));
      }
    } else {
      GemmShape g{p.m, p.k, p.n, false, true, p.batch, p.m * p.n, 0, p.m * p.k};
      if (p.batching == Batching::kEqual) g.stride_b = p.k * p.n;
      MEMPLAN_RETURN_IF_ERROR(Gemm(ctx.blas(), g, ct, 1.0f, gy.data, ob.data, 0.0f, r.data));
    }
    MEMPLAN_RETURN_IF_ERROR(Finish(ctx, r, ct));
  }
  if (want_b) {
    MEMPLAN_TRY(Operand oa, OperandIn(ctx, call.inputs[0], ct));
    MEMPLAN_TRY(Result r, ResultIn(ctx, call.grad_inputs[1], ct, Accumulates(call, 1)));
    // dB = A^T dY; folded: one (K x M*count) x (M*count x N) GEMM sums over the batch.
    GemmShape g{p.k, p.n, p.m, true, false, p.batch, 0, p.m * p.n, p.k * p.n};
    if (p.batching == Batching::kEqual) g.stride_a = p.m * p.k;
    MEMPLAN_RETURN_IF_ERROR(Gemm(ctx.blas(), g, ct, 1.0f, oa.data, gy.data, 0.0f, r.data));
    MEMPLAN_RETURN_IF_ERROR(Finish(ctx, r, ct));
  }
  return OkStatus();
}

// ---- Gemm -------------------------------------------------------------------------------------

struct GemmAttributes {
  float alpha = 1.0f;
  float beta = 1.0f;
  bool trans_a = false;
  bool trans_b = false;
};

GemmAttributes GemmAttributesOf(const Attributes* a) {
  GemmAttributes g;
  if (a == nullptr) return g;
  g.alpha = static_cast<float>(a->GetFloat("alpha", 1.0));
  g.beta = static_cast<float>(a->GetFloat("beta", 1.0));
  g.trans_a = a->GetInt("transA", 0) != 0;
  g.trans_b = a->GetInt("transB", 0) != 0;
  return g;
}

Expected<std::vector<DeviceTensor>> GemmForward(CudaContext& ctx, const ForwardCall& call) {
  if (call.inputs.size() < 2 || !call.inputs[0].defined() || !call.inputs[1].defined())
    return MakeError("Gemm: needs A and B");
  const GemmAttributes at = GemmAttributesOf(call.attributes);
  const DeviceTensor& a = call.inputs[0];
  const DeviceTensor& b = call.inputs[1];
  if (a.shape.size() != 2 || b.shape.size() != 2) return MakeError("Gemm: A and B must be 2-D");
  const int64_t m = at.trans_a ? a.shape[1] : a.shape[0];
  const int64_t k = at.trans_a ? a.shape[0] : a.shape[1];
  const int64_t n = at.trans_b ? b.shape[0] : b.shape[1];
  if ((at.trans_b ? b.shape[1] : b.shape[0]) != k) return MakeError("Gemm: inner dims differ");
  const DType ct = ComputeDType(a, b);
  MEMPLAN_TRY(DeviceTensor out, ForwardOutput(ctx, call, 0, {m, n}, OutputDType(call, 0, a.dtype)));
  MEMPLAN_TRY(Operand oa, OperandIn(ctx, a, ct));
  MEMPLAN_TRY(Operand ob, OperandIn(ctx, b, ct));
  MEMPLAN_TRY(Result r, ResultIn(ctx, out, ct, false));
  float gemm_beta = 0.0f;
  const bool has_c = call.inputs.size() > 2 && call.inputs[2].defined() && at.beta != 0.0f;
  if (has_c) {
    // Start from beta * C broadcast to [m, n]; the GEMM adds onto it.
    MEMPLAN_TRY(F32Input c, ctx.ReadF32(call.inputs[2]));
    MEMPLAN_TRY(StridedCopyGeometry geo, ExpandGeometry(call.inputs[2].shape, {m, n}));
    MEMPLAN_TRY(ScratchBuffer full, ctx.ScratchF32(m * n));
    MEMPLAN_RETURN_IF_ERROR(StridedCopy(c.data, full.f32(), geo, false, ctx.stream()));
    if (at.beta != 1.0f)
      MEMPLAN_RETURN_IF_ERROR(Axpby(at.beta, full.f32(), 0.0f, full.f32(), m * n, ctx.stream()));
    MEMPLAN_RETURN_IF_ERROR(
        CastBuffer(full.data(), DType::kFloat32, r.data, ct, m * n, ctx.stream()));
    gemm_beta = 1.0f;
  }
  const GemmShape g{m, n, k, at.trans_a, at.trans_b, 1, 0, 0, 0};
  MEMPLAN_RETURN_IF_ERROR(Gemm(ctx.blas(), g, ct, at.alpha, oa.data, ob.data, gemm_beta, r.data));
  MEMPLAN_RETURN_IF_ERROR(Finish(ctx, r, ct));
  return std::vector<DeviceTensor>{out};
}

Status GemmBackward(CudaContext& ctx, const BackwardCall& call) {
  if (call.grad_outputs.empty() || !call.grad_outputs[0].defined()) return ZeroGradients(ctx, call);
  const GemmAttributes at = GemmAttributesOf(call.attributes);
  const TensorShape& sa = call.input_shapes.at(0);
  const TensorShape& sb = call.input_shapes.at(1);
  const int64_t m = at.trans_a ? sa[1] : sa[0];
  const int64_t k = at.trans_a ? sa[0] : sa[1];
  const int64_t n = at.trans_b ? sb[0] : sb[1];
  const DeviceTensor& dy = call.grad_outputs[0];
  if (WantsGradient(call, 0)) {
    if (call.inputs.size() < 2 || !call.inputs[1].defined())
      return MakeError("Gemm backward: B was not saved");
    const DType ct = ComputeDType(call.inputs[1], dy);
    MEMPLAN_TRY(Operand gy, OperandIn(ctx, dy, ct));
    MEMPLAN_TRY(Operand ob, OperandIn(ctx, call.inputs[1], ct));
    MEMPLAN_TRY(Result r, ResultIn(ctx, call.grad_inputs[0], ct, Accumulates(call, 0)));
    // Â = op(A), B̂ = op(B): dÂ = dY B̂^T (m x k); with transA the stored dA = B̂ dY^T (k x m).
    const GemmShape g = at.trans_a ? GemmShape{k, m, n, at.trans_b, true, 1, 0, 0, 0}
                                   : GemmShape{m, k, n, false, !at.trans_b, 1, 0, 0, 0};
    const char* lhs = at.trans_a ? ob.data : gy.data;
    const char* rhs = at.trans_a ? gy.data : ob.data;
    MEMPLAN_RETURN_IF_ERROR(Gemm(ctx.blas(), g, ct, at.alpha, lhs, rhs, 0.0f, r.data));
    MEMPLAN_RETURN_IF_ERROR(Finish(ctx, r, ct));
  }
  if (WantsGradient(call, 1)) {
    if (call.inputs.empty() || !call.inputs[0].defined())
      return MakeError("Gemm backward: A was not saved");
    const DType ct = ComputeDType(call.inputs[0], dy);
    MEMPLAN_TRY(Operand gy, OperandIn(ctx, dy, ct));
    MEMPLAN_TRY(Operand oa, OperandIn(ctx, call.inputs[0], ct));
    MEMPLAN_TRY(Result r, ResultIn(ctx, call.grad_inputs[1], ct, Accumulates(call, 1)));
    // dB̂ = Â^T dY (k x n); with transB the stored dB = dY^T Â (n x k).
    const GemmShape g = at.trans_b ? GemmShape{n, k, m, true, at.trans_a, 1, 0, 0, 0}
                                   : GemmShape{k, n, m, !at.trans_a, false, 1, 0, 0, 0};
    const char* lhs = at.trans_b ? gy.data : oa.data;
    const char* rhs = at.trans_b ? oa.data : gy.data;
    MEMPLAN_RETURN_IF_ERROR(Gemm(ctx.blas(), g, ct, at.alpha, lhs, rhs, 0.0f, r.data));
    MEMPLAN_RETURN_IF_ERROR(Finish(ctx, r, ct));
  }
  if (WantsGradient(call, 2)) {
    // dC = beta * dY summed over the axes C broadcast along (C right-aligned to [m, n]).
    const TensorShape& sc = call.input_shapes.at(2);
    const int64_t cm = sc.size() >= 2 ? sc[sc.size() - 2] : 1;
    const int64_t cn = sc.empty() ? 1 : sc.back();
    MEMPLAN_TRY(F32Input g32, ctx.ReadF32(dy));
    MEMPLAN_TRY(F32Output dc, GradientTarget(ctx, call, 2));
    if (cm == m && cn == n) {
      MEMPLAN_RETURN_IF_ERROR(Axpby(at.beta, g32.data, 0.0f, dc.data(), m * n, ctx.stream()));
    } else {
      if (cm != m && cn == n) {
        MEMPLAN_RETURN_IF_ERROR(ReduceMiddle(g32.data, dc.data(), 1, m, n, false, ctx.stream()));
      } else if (cm == m && cn != n) {
        MEMPLAN_RETURN_IF_ERROR(ReduceMiddle(g32.data, dc.data(), m, n, 1, false, ctx.stream()));
      } else {
        MEMPLAN_RETURN_IF_ERROR(
            ReduceMiddle(g32.data, dc.data(), 1, m * n, 1, false, ctx.stream()));
      }
      if (at.beta != 1.0f)
        MEMPLAN_RETURN_IF_ERROR(
            Axpby(at.beta, dc.data(), 0.0f, dc.data(), call.grad_inputs[2].numel(), ctx.stream()));
    }
    MEMPLAN_RETURN_IF_ERROR(ctx.Commit(dc));
  }
  return OkStatus();
}

}  // namespace

void RegisterMatMulOps(CudaOpTable& table) {
  table.Register("MatMul", MatMulForward, MatMulBackward);
  table.Register("Gemm", GemmForward, GemmBackward);
}

}  // namespace memplan::cuda
