// Conv (2-D, group 1) by implicit GEMM: im2col per chunk of images, then one strided-batched
// cuBLAS GEMM; MaxPool (2-D) and GlobalAveragePool. Conv runs in fp32 (fp16 convolutions are
// converted on the way in and out; a cuDNN path would keep them on tensor cores).

#include <algorithm>

#include "runtime/cuda/gemm.h"
#include "runtime/cuda/kernels/conv_kernels.h"
#include "runtime/cuda/kernels/cuda_kernels.h"
#include "runtime/cuda/ops/cuda_op_table.h"
#include "runtime/cuda/ops/op_util.h"

namespace memplan::cuda {
namespace {

// The im2col scratch of one chunk of images stays under this many fp32 elements (128 MiB).
constexpr int64_t kMaxColumnElements = int64_t{32} << 20;

// The 2-D window of `op` over NCHW `x` by the shared geometry (auto_pad and ceil_mode included).
Expected<Window2d> WindowOf(std::string_view op, const Attributes* a, const TensorShape& x,
                            const std::vector<int64_t>& kernel, bool read_ceil_mode) {
  if (x.size() != 4) return Unsupported(op, "tensors other than 2-D NCHW");
  if (kernel.size() != 2) return Unsupported(op, "a kernel that is not 2-D");
  const Attributes none;
  return MakeWindow2d(op, a ? *a : none, x, kernel, read_ceil_mode);
}

int64_t ChunkImages(const Window2d& w, int64_t images) {
  const int64_t per_image = std::max<int64_t>(w.col_rows() * w.col_cols(), 1);
  return std::clamp<int64_t>(kMaxColumnElements / per_image, 1, std::max<int64_t>(images, 1));
}

Expected<Window2d> ConvWindow(const Attributes* a, const TensorShape& x,
                              const TensorShape& weight) {
  if (a != nullptr && a->GetInt("group", 1) != 1) return Unsupported("Conv", "group != 1");
  if (weight.size() != 4) return Unsupported("Conv", "a weight that is not 4-D");
  MEMPLAN_TRY(Window2d w, WindowOf("Conv", a, x, {weight[2], weight[3]}, /*read_ceil_mode=*/false));
  if (weight[1] != x[1]) return MakeError("Conv: weight channels differ from the input's");
  return w;
}

Expected<std::vector<DeviceTensor>> ConvForward(CudaContext& ctx, const ForwardCall& call) {
  if (call.inputs.size() < 2 || !call.inputs[0].defined() || !call.inputs[1].defined())
    return MakeError("Conv: needs X and W");
  const DeviceTensor& x = call.inputs[0];
  const DeviceTensor& weight = call.inputs[1];
  MEMPLAN_TRY(Window2d w, ConvWindow(call.attributes, x.shape, weight.shape));
  const int64_t n = x.shape[0];
  const int64_t m = weight.shape[0];
  const TensorShape out_shape{n, m, w.out_h(), w.out_w()};
  MEMPLAN_TRY(F32Input fx, ctx.ReadF32(x));
  MEMPLAN_TRY(F32Input fw, ctx.ReadF32(weight));
  MEMPLAN_TRY(ForwardTarget t,
              PrepareOutput(ctx, call, 0, out_shape, OutputDType(call, 0, x.dtype)));
  const int64_t chunk = ChunkImages(w, n);
  MEMPLAN_TRY(ScratchBuffer col, ctx.ScratchF32(chunk * w.col_rows() * w.col_cols()));
  const int64_t image_in = w.channels * w.in_h * w.in_w;
  const int64_t image_out = m * w.col_cols();
  for (int64_t n0 = 0; n0 < n; n0 += chunk) {
    const int64_t images = std::min(chunk, n - n0);
    MEMPLAN_RETURN_IF_ERROR(Im2Col(fx.data + n0 * image_in, w, images, col.f32(), ctx.stream()));
    // y[i] (m x OHW) = W (m x CKK) * col[i] (CKK x OHW).
    const GemmShape g{
        m,        w.col_cols(), w.col_rows(), false, false, images, 0, w.col_rows() * w.col_cols(),
        image_out};
    MEMPLAN_RETURN_IF_ERROR(Gemm(ctx.blas(), g, DType::kFloat32, 1.0f, fw.data, col.f32(), 0.0f,
                                 t.out.data() + n0 * image_out));
  }
  if (call.inputs.size() > 2 && call.inputs[2].defined()) {
    MEMPLAN_TRY(F32Input bias, ctx.ReadF32(call.inputs[2]));
    MEMPLAN_RETURN_IF_ERROR(BinaryForward(BinaryOp::kAdd, t.out.data(), out_shape, bias.data,
                                          {1, m, 1, 1}, t.out.data(), ctx.stream()));
  }
  MEMPLAN_RETURN_IF_ERROR(ctx.Commit(t.out));
  return std::vector<DeviceTensor>{t.tensor};
}

Status ConvBackward(CudaContext& ctx, const BackwardCall& call) {
  if (call.grad_outputs.empty() || !call.grad_outputs[0].defined()) return ZeroGradients(ctx, call);
  const TensorShape& xs = call.input_shapes.at(0);
  const TensorShape& ws = call.input_shapes.at(1);
  MEMPLAN_TRY(Window2d w, ConvWindow(call.attributes, xs, ws));
  const int64_t n = xs[0];
  const int64_t m = ws[0];
  const int64_t image_in = w.channels * w.in_h * w.in_w;
  const int64_t image_out = m * w.col_cols();
  MEMPLAN_TRY(F32Input dy, ctx.ReadF32(call.grad_outputs[0]));
  const bool want_x = WantsGradient(call, 0);
  const bool want_w = WantsGradient(call, 1);
  if ((want_w && !call.inputs[0].defined()) || (want_x && !call.inputs[1].defined()))
    return MakeError("Conv backward: the inputs it needs were not saved");
  if (want_x || want_w) {
    F32Input fx, fw;
    if (want_w) {
      MEMPLAN_TRY(fx, ctx.ReadF32(call.inputs[0]));
    }
    if (want_x) {
      MEMPLAN_TRY(fw, ctx.ReadF32(call.inputs[1]));
    }
    MEMPLAN_TRY(F32Output dx, GradientTarget(ctx, call, 0));
    MEMPLAN_TRY(F32Output dw, GradientTarget(ctx, call, 1));
    if (want_x) MEMPLAN_RETURN_IF_ERROR(Fill(dx.data(), 0.0f, n * image_in, ctx.stream()));
    const int64_t chunk = ChunkImages(w, n);
    MEMPLAN_TRY(ScratchBuffer col, ctx.ScratchF32(chunk * w.col_rows() * w.col_cols()));
    const int64_t col_size = w.col_rows() * w.col_cols();
    for (int64_t n0 = 0; n0 < n; n0 += chunk) {
      const int64_t images = std::min(chunk, n - n0);
      const float* dy_chunk = dy.data + n0 * image_out;
      if (want_w) {
        MEMPLAN_RETURN_IF_ERROR(
            Im2Col(fx.data + n0 * image_in, w, images, col.f32(), ctx.stream()));
        // dW (m x CKK) += dy[i] (m x OHW) * col[i]^T, summed image by image.
        for (int64_t i = 0; i < images; ++i) {
          const GemmShape g{m, w.col_rows(), w.col_cols(), false, true, 1, 0, 0, 0};
          MEMPLAN_RETURN_IF_ERROR(Gemm(ctx.blas(), g, DType::kFloat32, 1.0f,
                                       dy_chunk + i * image_out, col.f32() + i * col_size,
                                       n0 + i == 0 ? 0.0f : 1.0f, dw.data()));
        }
      }
      if (want_x) {
        // dcol[i] (CKK x OHW) = W^T (CKK x m) * dy[i] (m x OHW), folded back by col2im.
        const GemmShape g{w.col_rows(), w.col_cols(), m, true, false, images, 0,
                          image_out,    col_size};
        MEMPLAN_RETURN_IF_ERROR(
            Gemm(ctx.blas(), g, DType::kFloat32, 1.0f, fw.data, dy_chunk, 0.0f, col.f32()));
        MEMPLAN_RETURN_IF_ERROR(
            Col2ImAdd(col.f32(), w, images, dx.data() + n0 * image_in, ctx.stream()));
      }
    }
    if (want_x) MEMPLAN_RETURN_IF_ERROR(ctx.Commit(dx));
    if (want_w) MEMPLAN_RETURN_IF_ERROR(ctx.Commit(dw));
  }
  if (WantsGradient(call, 2)) {
    // dB[c] = sum over images and positions of dy.
    MEMPLAN_TRY(ScratchBuffer per_image, ctx.ScratchF32(n * m));
    MEMPLAN_RETURN_IF_ERROR(
        ReduceMiddle(dy.data, per_image.f32(), n * m, w.col_cols(), 1, false, ctx.stream()));
    MEMPLAN_TRY(F32Output db, GradientTarget(ctx, call, 2));
    MEMPLAN_RETURN_IF_ERROR(ReduceMiddle(per_image.f32(), db.data(), 1, n, m, false, ctx.stream()));
    MEMPLAN_RETURN_IF_ERROR(ctx.Commit(db));
  }
  return OkStatus();
}

Expected<Window2d> PoolWindow(const Attributes* a, const TensorShape& x) {
  if (a != nullptr && a->GetInt("storage_order", 0) != 0)
    return Unsupported("MaxPool", "storage_order=1");
  return WindowOf("MaxPool", a, x, a ? a->GetInts("kernel_shape") : std::vector<int64_t>(),
                  /*read_ceil_mode=*/true);
}

Expected<std::vector<DeviceTensor>> MaxPoolForwardOp(CudaContext& ctx, const ForwardCall& call) {
  if (call.inputs.empty() || !call.inputs[0].defined()) return MakeError("MaxPool: no input");
  if (call.outputs.size() > 1 && call.outputs[1].defined())
    return Unsupported("MaxPool", "the Indices output (only the saved argmax is kept)");
  const DeviceTensor& x = call.inputs[0];
  MEMPLAN_TRY(Window2d w, PoolWindow(call.attributes, x.shape));
  const int64_t planes = x.shape[0] * x.shape[1];
  const TensorShape out{x.shape[0], x.shape[1], w.out_h(), w.out_w()};
  MEMPLAN_TRY(F32Input fx, ctx.ReadF32(x));
  MEMPLAN_TRY(ForwardTarget t, PrepareOutput(ctx, call, 0, out, OutputDType(call, 0, x.dtype)));
  // The saved argmax: this backend's own format (index within the plane, exact in fp32).
  F32Output argmax;
  if (auto it = call.extras.find("indices"); it != call.extras.end() && it->second.defined()) {
    if (it->second.numel() != NumElements(out))
      return MakeError("MaxPool: the saved indices buffer does not match the output");
    MEMPLAN_TRY(argmax, ctx.WriteF32(it->second, false));
  }
  MEMPLAN_RETURN_IF_ERROR(
      MaxPoolForward(fx.data, w, planes, t.out.data(), argmax.data(), ctx.stream()));
  MEMPLAN_RETURN_IF_ERROR(ctx.Commit(t.out));
  if (argmax.defined()) MEMPLAN_RETURN_IF_ERROR(ctx.Commit(argmax));
  std::vector<DeviceTensor> outs{t.tensor};
  if (call.num_outputs > 1) outs.emplace_back();
  return outs;
}

Status MaxPoolBackwardOp(CudaContext& ctx, const BackwardCall& call) {
  if (call.grad_outputs.empty() || !call.grad_outputs[0].defined()) return ZeroGradients(ctx, call);
  if (!WantsGradient(call, 0)) return OkStatus();
  auto it = call.extras.find("indices");
  if (it == call.extras.end() || !it->second.defined())
    return MakeError("MaxPool backward: the saved indices are missing");
  const TensorShape& xs = call.input_shapes.at(0);
  MEMPLAN_TRY(Window2d w, PoolWindow(call.attributes, xs));
  MEMPLAN_TRY(F32Input argmax, ctx.ReadF32(it->second));
  MEMPLAN_TRY(F32Input dy, ctx.ReadF32(call.grad_outputs[0]));
  MEMPLAN_TRY(F32Output dx, GradientTarget(ctx, call, 0));
  MEMPLAN_RETURN_IF_ERROR(Fill(dx.data(), 0.0f, NumElements(xs), ctx.stream()));
  MEMPLAN_RETURN_IF_ERROR(
      MaxPoolBackward(dy.data, argmax.data, w, xs[0] * xs[1], dx.data(), ctx.stream()));
  return ctx.Commit(dx);
}

Expected<std::vector<DeviceTensor>> GlobalAveragePoolForward(CudaContext& ctx,
                                                             const ForwardCall& call) {
  if (call.inputs.empty() || !call.inputs[0].defined() || call.inputs[0].shape.size() < 3)
    return MakeError("GlobalAveragePool: needs an N, C, spatial... input");
  const DeviceTensor& x = call.inputs[0];
  TensorShape out{x.shape[0], x.shape[1]};
  out.resize(x.shape.size(), 1);
  const int64_t planes = x.shape[0] * x.shape[1];
  MEMPLAN_TRY(F32Input fx, ctx.ReadF32(x));
  MEMPLAN_TRY(ForwardTarget t, PrepareOutput(ctx, call, 0, out, OutputDType(call, 0, x.dtype)));
  MEMPLAN_RETURN_IF_ERROR(ReduceMiddle(fx.data, t.out.data(), planes, x.numel() / planes, 1,
                                       /*mean=*/true, ctx.stream()));
  MEMPLAN_RETURN_IF_ERROR(ctx.Commit(t.out));
  return std::vector<DeviceTensor>{t.tensor};
}

Status GlobalAveragePoolBackward(CudaContext& ctx, const BackwardCall& call) {
  if (call.grad_outputs.empty() || !call.grad_outputs[0].defined()) return ZeroGradients(ctx, call);
  if (!WantsGradient(call, 0)) return OkStatus();
  const TensorShape& xs = call.input_shapes.at(0);
  const int64_t planes = xs[0] * xs[1];
  MEMPLAN_TRY(F32Input dy, ctx.ReadF32(call.grad_outputs[0]));
  MEMPLAN_TRY(F32Output dx, GradientTarget(ctx, call, 0));
  MEMPLAN_RETURN_IF_ERROR(ReduceMiddleBackward(dy.data, dx.data(), planes, NumElements(xs) / planes,
                                               1, /*mean=*/true, ctx.stream()));
  return ctx.Commit(dx);
}

}  // namespace

void RegisterConvPoolOps(CudaOpTable& table) {
  table.Register("Conv", ConvForward, ConvBackward);
  table.Register("MaxPool", MaxPoolForwardOp, MaxPoolBackwardOp);
  table.Register("GlobalAveragePool", GlobalAveragePoolForward, GlobalAveragePoolBackward);
}

}  // namespace memplan::cuda
