#pragma once
// The CUDA backend's own kernels, callable from plain C++ (no CUDA types but the stream).
// Everything computes in fp32; tensors are dense row-major fp32 device buffers unless a function
// says otherwise (GEMM and the casts take fp16/bf16). Each function launches on `stream`, checks
// the launch and returns an Error naming the kernel; none synchronizes.
//
// Shapes follow ONNX: multidirectional (numpy) broadcasting for binary ops, softmax and layer
// normalization over the last axis, reductions over one contiguous block of axes.

#include <cuda_runtime_api.h>

#include <cstdint>
#include <vector>

#include "graph/dtype.h"
#include "graph/expected.h"
#include "runtime/tensor_shape.h"

namespace memplan::cuda {

// ---- elementwise ------------------------------------------------------------------------------
// The comparisons and Not write 1 or 0 (booleans are stored as fp32, cuda_storage.h) and have
// no gradient.
enum class BinaryOp : uint8_t {
  kAdd,
  kSub,
  kMul,
  kDiv,
  kEqual,
  kLess,
  kLessOrEqual,
  kGreater,
  kGreaterOrEqual
};
enum class UnaryOp : uint8_t { kRelu, kGelu, kSigmoid, kTanh, kErf, kNot };

// The numpy broadcast of two shapes; error when they do not broadcast. Ranks up to kMaxRank.
inline constexpr int kMaxRank = 8;
Expected<TensorShape> BroadcastShapes(const TensorShape& a, const TensorShape& b);

// out = a op b over the broadcast shape.
Status BinaryForward(BinaryOp op, const float* a, const TensorShape& a_shape, const float* b,
                     const TensorShape& b_shape, float* out, cudaStream_t stream);
// Gradients of out = a op b: da (a_shape) and db (b_shape) are *overwritten*, summed over the
// broadcast axes; either may be null when not wanted. a and b are needed for Mul and Div.
Status BinaryBackward(BinaryOp op, const float* a, const TensorShape& a_shape, const float* b,
                      const TensorShape& b_shape, const float* grad_out, float* da, float* db,
                      cudaStream_t stream);

// y = f(x), n elements. Gelu is the exact erf form (ONNX Gelu, approximate="none").
Status UnaryForward(UnaryOp op, const float* x, float* y, int64_t n, cudaStream_t stream);
// Whether an op's backward reads its result y (what PyTorch's derivatives.yaml saves, and so what
// the training program keeps: Relu, Sigmoid, Tanh) rather than its input x (Gelu, Erf).
constexpr bool UnaryBackwardReadsOutput(UnaryOp op) {
  return op == UnaryOp::kRelu || op == UnaryOp::kSigmoid || op == UnaryOp::kTanh;
}
// dx = f'(x) * dy, reading y where UnaryBackwardReadsOutput says so, else x (the other may be
// null).
Status UnaryBackward(UnaryOp op, const float* x, const float* y, const float* dy, float* dx,
                     int64_t n, cudaStream_t stream);

// y = alpha * x + beta * y (beta 0 ignores y's old contents), n elements.
Status Axpby(float alpha, const float* x, float beta, float* y, int64_t n, cudaStream_t stream);
Status Fill(float* y, float value, int64_t n, cudaStream_t stream);

// ---- casts (fp32 <-> fp16/bf16, round to nearest even) -----------------------------------------
// dst (dtype `to`) = src (dtype `from`); supported: float32, float16, bfloat16 in any direction.
Status CastBuffer(const void* src, DType from, void* dst, DType to, int64_t n, cudaStream_t stream);

// ---- softmax / layer norm over the last axis ---------------------------------------------------
// x viewed as [rows, cols].
Status SoftmaxForward(const float* x, float* y, int64_t rows, int64_t cols, cudaStream_t stream);
// dx = y * (dy - sum(dy * y)) per row.
Status SoftmaxBackward(const float* y, const float* dy, float* dx, int64_t rows, int64_t cols,
                       cudaStream_t stream);

// y = (x - mean) * invstd * gamma + beta per row; mean and invstd ([rows]) are written for
// backward. beta may be null.
Status LayerNormForward(const float* x, const float* gamma, const float* beta, float epsilon,
                        float* y, float* mean, float* invstd, int64_t rows, int64_t cols,
                        cudaStream_t stream);
// dx (overwritten), dgamma and dbeta ([cols], overwritten; either may be null).
Status LayerNormBackward(const float* x, const float* gamma, const float* mean, const float* invstd,
                         const float* dy, float* dx, float* dgamma, float* dbeta, int64_t rows,
                         int64_t cols, cudaStream_t stream);

// ---- reductions --------------------------------------------------------------------------------
// x viewed as [outer, reduce, inner] -> y [outer, inner]: sum, or mean when `mean`.
Status ReduceMiddle(const float* x, float* y, int64_t outer, int64_t reduce, int64_t inner,
                    bool mean, cudaStream_t stream);
// The backward: dx[o, r, i] = dy[o, i] (/ reduce when `mean`).
Status ReduceMiddleBackward(const float* dy, float* dx, int64_t outer, int64_t reduce,
                            int64_t inner, bool mean, cudaStream_t stream);

// ---- gather / embedding ------------------------------------------------------------------------
// out[i, :] = table[indices[i], :] for a [rows, cols] table; indices are fp32 holding integers
// (as the CPU backend stores them); negative indices count from the end (ONNX Gather).
// REQUIRES: indices in [-rows, rows) (the caller validates them on the host); a row out of range
// is written as zeros rather than read out of bounds.
Status GatherRows(const float* table, int64_t rows, int64_t cols, const float* indices,
                  int64_t count, float* out, cudaStream_t stream);
// dtable (overwritten) = sum of grad_out rows scattered to their indices.
Status GatherRowsBackward(const float* grad_out, const float* indices, int64_t count, int64_t rows,
                          int64_t cols, float* dtable, cudaStream_t stream);

}  // namespace memplan::cuda
