// MatMul (numpy matmul: batched, broadcasting batch dims, 1-D operands promoted) and Gemm
// (2-D, transA/transB, alpha/beta, C broadcast to [M,N]).

#include <array>
#include <string>

#include "runtime/cpu/kernel_registry.h"
#include "runtime/cpu/kernels/broadcast.h"
#include "runtime/cpu/kernels/gemm_core.h"
#include "runtime/cpu/kernels/kernel_families.h"
#include "runtime/cpu/kernels/kernel_util.h"

namespace memplan {
namespace {

// MatMul operands seen as batches of matrices: a 1-D A becomes [1,K], a 1-D B becomes [K,1], and
// the dims added that way are dropped from the output.
struct MatMulPlan {
  TensorShape a_matrix_shape;  // a's shape after 1-D promotion
  TensorShape b_matrix_shape;
  TensorShape batch;  // broadcast batch dims
  int64_t m = 0, n = 0, k = 0;
  TensorShape output;                    // what the op returns
  std::vector<int64_t> a_batch_strides;  // in matrices, through `batch`
  std::vector<int64_t> b_batch_strides;
};

Expected<MatMulPlan> PlanMatMul(const TensorShape& a, const TensorShape& b) {
  if (a.empty() || b.empty()) return MakeError("MatMul: operands must have rank >= 1");
  MatMulPlan plan;
  plan.a_matrix_shape = a.size() == 1 ? TensorShape{1, a[0]} : a;
  plan.b_matrix_shape = b.size() == 1 ? TensorShape{b[0], 1} : b;
  const TensorShape& pa = plan.a_matrix_shape;
  const TensorShape& pb = plan.b_matrix_shape;
  plan.m = pa[pa.size() - 2];
  plan.k = pa[pa.size() - 1];
  plan.n = pb[pb.size() - 1];
  if (pb[pb.size() - 2] != plan.k) {
    return MakeError("MatMul: inner dims differ: " + ShapeToString(a) + " x " + ShapeToString(b));
  }
  const TensorShape a_batch(pa.begin(), pa.end() - 2);
  const TensorShape b_batch(pb.begin(), pb.end() - 2);
  MEMPLAN_TRY(plan.batch, BroadcastShapes(a_batch, b_batch, "MatMul"));
  plan.a_batch_strides = BroadcastStrides(a_batch, plan.batch);
  plan.b_batch_strides = BroadcastStrides(b_batch, plan.batch);
  plan.output = plan.batch;
  if (a.size() > 1) plan.output.push_back(plan.m);
  if (b.size() > 1) plan.output.push_back(plan.n);
  return plan;
}

// Calls visit(batch_index, a_matrix, b_matrix) for every output matrix.
template <class Visit>
void ForEachMatrix(const MatMulPlan& plan, Visit&& visit) {
  const std::array<std::vector<int64_t>, 2> strides = {plan.a_batch_strides, plan.b_batch_strides};
  ForEachBroadcastIndex(plan.batch, strides, [&](int64_t i, const std::array<int64_t, 2>& off) {
    visit(i, off[0], off[1]);
  });
}

Expected<ForwardResult> MatMulForward(const KernelContext& ctx, const ForwardArgs& args) {
  MEMPLAN_TRY(Tensor a, RequireTensor(args.inputs, 0, "MatMul", "input"));
  MEMPLAN_TRY(Tensor b, RequireTensor(args.inputs, 1, "MatMul", "input"));
  MEMPLAN_TRY(MatMulPlan plan, PlanMatMul(a.shape(), b.shape()));
  Tensor y = NewOutput(ctx, plan.output, a.dtype());
  const int64_t a_size = plan.m * plan.k, b_size = plan.k * plan.n, y_size = plan.m * plan.n;
  ForEachMatrix(plan, [&](int64_t out, int64_t ia, int64_t ib) {
    GemmAccumulate(false, false, plan.m, plan.n, plan.k, 1.0f, a.data() + ia * a_size,
                   b.data() + ib * b_size, y.mutable_data() + out * y_size);
  });
  return RoundedSingleOutput(std::move(y));
}

// dA = dY B^T and dB = A^T dY per matrix; a matrix broadcast over the batch accumulates the
// products of every batch entry it served, which is the sum over broadcast dims.
Expected<InputGradients> MatMulBackward(const KernelContext& ctx, const BackwardArgs& args) {
  MEMPLAN_TRY(Tensor dy, RequireTensor(args.grad_outputs, 0, "MatMul", "output gradient"));
  MEMPLAN_TRY(InputGradients grads, MakeGradientSlots(args, 2, "MatMul"));
  // Each operand is saved only for the other's gradient (x W with x not requiring grad keeps x
  // alone), so shapes come from input_shapes and an operand is required only when read.
  Tensor a, b;
  if (args.NeedsGrad(1)) {
    MEMPLAN_TRY(a, RequireTensor(args.inputs, 0, "MatMul", "saved input"));
  }
  if (args.NeedsGrad(0)) {
    MEMPLAN_TRY(b, RequireTensor(args.inputs, 1, "MatMul", "saved input"));
  }
  MEMPLAN_TRY(MatMulPlan plan, PlanMatMul(args.input_shapes[0], args.input_shapes[1]));
  const int64_t a_size = plan.m * plan.k, b_size = plan.k * plan.n, y_size = plan.m * plan.n;
  if (args.NeedsGrad(0)) {
    Tensor da = NewInputGradient(ctx, args, 0);
    ForEachMatrix(plan, [&](int64_t out, int64_t ia, int64_t ib) {
      GemmAccumulate(false, true, plan.m, plan.k, plan.n, 1.0f, dy.data() + out * y_size,
                     b.data() + ib * b_size, da.mutable_data() + ia * a_size);
    });
    PutRoundedGradient(grads, 0, std::move(da));
  }
  if (args.NeedsGrad(1)) {
    Tensor db = NewInputGradient(ctx, args, 1);
    ForEachMatrix(plan, [&](int64_t out, int64_t ia, int64_t ib) {
      GemmAccumulate(true, false, plan.k, plan.n, plan.m, 1.0f, a.data() + ia * a_size,
                     dy.data() + out * y_size, db.mutable_data() + ib * b_size);
    });
    PutRoundedGradient(grads, 1, std::move(db));
  }
  return grads;
}

struct GemmParams {
  bool trans_a = false, trans_b = false;
  float alpha = 1.0f, beta = 1.0f;
  int64_t m = 0, n = 0, k = 0;
};

Expected<GemmParams> PlanGemm(const Attributes& attrs, const TensorShape& a, const TensorShape& b) {
  if (a.size() != 2 || b.size() != 2) {
    return MakeError("Gemm: A and B must be 2-D, got " + ShapeToString(a) + " and " +
                     ShapeToString(b));
  }
  GemmParams p;
  p.trans_a = attrs.GetInt("transA", 0) != 0;
  p.trans_b = attrs.GetInt("transB", 0) != 0;
  p.alpha = static_cast<float>(attrs.GetFloat("alpha", 1.0));
  p.beta = static_cast<float>(attrs.GetFloat("beta", 1.0));
  p.m = p.trans_a ? a[1] : a[0];
  p.k = p.trans_a ? a[0] : a[1];
  p.n = p.trans_b ? b[0] : b[1];
  const int64_t kb = p.trans_b ? b[1] : b[0];
  if (kb != p.k) {
    return MakeError("Gemm: inner dims differ: " + ShapeToString(a) + " x " + ShapeToString(b));
  }
  return p;
}

Expected<ForwardResult> GemmForward(const KernelContext& ctx, const ForwardArgs& args) {
  MEMPLAN_TRY(Tensor a, RequireTensor(args.inputs, 0, "Gemm", "input"));
  MEMPLAN_TRY(Tensor b, RequireTensor(args.inputs, 1, "Gemm", "input"));
  const Tensor c = OptionalTensor(args.inputs, 2);
  MEMPLAN_TRY(GemmParams p, PlanGemm(AttributesOf(args.attributes), a.shape(), b.shape()));
  const TensorShape shape = {p.m, p.n};
  Tensor y = NewOutput(ctx, shape, a.dtype());
  if (c.defined() && p.beta != 0.0f) {
    MEMPLAN_TRY(TensorShape broadcast, BroadcastShapes(c.shape(), shape, "Gemm"));
    if (broadcast != shape) {
      return MakeError("Gemm: C of shape " + ShapeToString(c.shape()) + " does not broadcast to " +
                       ShapeToString(shape));
    }
    const std::array<std::vector<int64_t>, 1> strides = {BroadcastStrides(c.shape(), shape)};
    float* out = y.mutable_data();
    ForEachBroadcastIndex(shape, strides, [&](int64_t i, const std::array<int64_t, 1>& off) {
      out[i] = p.beta * c.data()[off[0]];
    });
  }
  GemmAccumulate(p.trans_a, p.trans_b, p.m, p.n, p.k, p.alpha, a.data(), b.data(),
                 y.mutable_data());
  return RoundedSingleOutput(std::move(y));
}

Expected<InputGradients> GemmBackward(const KernelContext& ctx, const BackwardArgs& args) {
  MEMPLAN_TRY(Tensor dy, RequireTensor(args.grad_outputs, 0, "Gemm", "output gradient"));
  MEMPLAN_TRY(InputGradients grads, MakeGradientSlots(args, 2, "Gemm"));
  MEMPLAN_TRY(GemmParams p,
              PlanGemm(AttributesOf(args.attributes), args.input_shapes[0], args.input_shapes[1]));
  const float* g = dy.data();
  if (args.NeedsGrad(0)) {
    MEMPLAN_TRY(Tensor b, RequireTensor(args.inputs, 1, "Gemm", "saved input"));
    Tensor da = NewInputGradient(ctx, args, 0);
    if (!p.trans_a) {  // dA[M,K] = alpha dY op(B)^T
      GemmAccumulate(false, !p.trans_b, p.m, p.k, p.n, p.alpha, g, b.data(), da.mutable_data());
    } else {  // A stored [K,M]: dA = alpha op(B) dY^T
      GemmAccumulate(p.trans_b, true, p.k, p.m, p.n, p.alpha, b.data(), g, da.mutable_data());
    }
    PutRoundedGradient(grads, 0, std::move(da));
  }
  if (args.NeedsGrad(1)) {
    MEMPLAN_TRY(Tensor a, RequireTensor(args.inputs, 0, "Gemm", "saved input"));
    Tensor db = NewInputGradient(ctx, args, 1);
    if (!p.trans_b) {  // dB[K,N] = alpha op(A)^T dY
      GemmAccumulate(!p.trans_a, false, p.k, p.n, p.m, p.alpha, a.data(), g, db.mutable_data());
    } else {  // B stored [N,K]: dB = alpha dY^T op(A)
      GemmAccumulate(true, p.trans_a, p.n, p.k, p.m, p.alpha, g, a.data(), db.mutable_data());
    }
    PutRoundedGradient(grads, 1, std::move(db));
  }
  if (args.InputPresent(2) && args.NeedsGrad(2)) {
    // dC = beta dY summed over the dims C was broadcast along; computed in fp32, rounded once.
    Tensor sum = SumToShape(ctx, dy, args.input_shapes[2], DType::kFloat32);
    Tensor dc = NewInputGradient(ctx, args, 2);
    float* out = dc.mutable_data();
    for (int64_t i = 0; i < dc.numel(); ++i) out[i] = p.beta * sum.data()[i];
    PutRoundedGradient(grads, 2, std::move(dc));
  }
  return grads;
}

}  // namespace

void RegisterMatMulKernels(KernelRegistry& registry) {
  registry.Register("MatMul", &MatMulForward, &MatMulBackward);
  registry.Register("Gemm", &GemmForward, &GemmBackward);
}

}  // namespace memplan
