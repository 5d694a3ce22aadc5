// Elementwise kernels: broadcasting binary ops, activations, axpby/fill.

#include <cmath>
#include <string>

#include "runtime/cuda/cuda_status.h"
#include "runtime/cuda/kernels/launch_config.cuh"

namespace memplan::cuda {
namespace {

constexpr float kInvSqrt2 = 0.70710678118654752f;
constexpr float kInvSqrt2Pi = 0.39894228040143268f;
constexpr float kTwoOverSqrtPi = 1.12837916709551257f;  // d/dx erf(x) = 2/sqrt(pi) exp(-x^2)

__device__ float ApplyBinary(BinaryOp op, float a, float b) {
  switch (op) {
    case BinaryOp::kAdd:
      return a + b;
    case BinaryOp::kSub:
      return a - b;
    case BinaryOp::kMul:
      return a * b;
    case BinaryOp::kDiv:
      return a / b;
    case BinaryOp::kEqual:
      return a == b ? 1.0f : 0.0f;
    case BinaryOp::kLess:
      return a < b ? 1.0f : 0.0f;
    case BinaryOp::kLessOrEqual:
      return a <= b ? 1.0f : 0.0f;
    case BinaryOp::kGreater:
      return a > b ? 1.0f : 0.0f;
    case BinaryOp::kGreaterOrEqual:
      return a >= b ? 1.0f : 0.0f;
  }
  return 0.0f;
}

__global__ void BinaryKernel(BinaryOp op, const float* a, const float* b, float* out, int64_t n,
                             BroadcastGeometry g) {
  for (const int64_t i : GridStride(n)) {
    int64_t ia = 0;
    int64_t ib = 0;
    BroadcastOffsets(g, i, ia, ib);
    out[i] = ApplyBinary(op, a[ia], b[ib]);
  }
}

// Each output element adds its contribution into the (zeroed) input gradients; atomics sum the
// broadcast axes.
__global__ void BinaryBackwardKernel(BinaryOp op, const float* a, const float* b,
                                     const float* grad_out, float* da, float* db, int64_t n,
                                     BroadcastGeometry g) {
  for (const int64_t i : GridStride(n)) {
    int64_t ia = 0;
    int64_t ib = 0;
    BroadcastOffsets(g, i, ia, ib);
    const float dy = grad_out[i];
    float ga = dy;
    float gb = dy;
    switch (op) {
      case BinaryOp::kAdd:
        break;
      case BinaryOp::kSub:
        gb = -dy;
        break;
      // Only what a wanted gradient needs is read: the program saves no operand that no
      // gradient reads (x / scale keeps the scale alone).
      case BinaryOp::kMul:
        if (da != nullptr) ga = dy * b[ib];
        if (db != nullptr) gb = dy * a[ia];
        break;
      case BinaryOp::kDiv:
        if (da != nullptr) ga = dy / b[ib];
        if (db != nullptr) gb = -dy * a[ia] / (b[ib] * b[ib]);
        break;
      case BinaryOp::kEqual:  // piecewise constant
      case BinaryOp::kLess:
      case BinaryOp::kLessOrEqual:
      case BinaryOp::kGreater:
      case BinaryOp::kGreaterOrEqual:
        ga = 0.0f;
        gb = 0.0f;
        break;
    }
    if (da != nullptr) atomicAdd(&da[ia], ga);
    if (db != nullptr) atomicAdd(&db[ib], gb);
  }
}

__global__ void UnaryKernel(UnaryOp op, const float* x, float* y, int64_t n) {
  for (const int64_t i : GridStride(n)) {
    const float v = x[i];
    switch (op) {
      case UnaryOp::kRelu:
        y[i] = v > 0.0f ? v : 0.0f;
        break;
      case UnaryOp::kGelu:
        y[i] = 0.5f * v * (1.0f + erff(v * kInvSqrt2));
        break;
      case UnaryOp::kSigmoid:
        y[i] = 1.0f / (1.0f + expf(-v));
        break;
      case UnaryOp::kTanh:
        y[i] = tanhf(v);
        break;
      case UnaryOp::kErf:
        y[i] = erff(v);
        break;
      case UnaryOp::kNot:
        y[i] = v == 0.0f ? 1.0f : 0.0f;
        break;
    }
  }
}

__global__ void UnaryBackwardKernel(UnaryOp op, const float* x, const float* y, const float* dy,
                                    float* dx, int64_t n) {
  for (const int64_t i : GridStride(n)) {
    const float g = dy[i];
    switch (op) {
      case UnaryOp::kRelu:  // y > 0 exactly where x > 0
        dx[i] = y[i] > 0.0f ? g : 0.0f;
        break;
      case UnaryOp::kGelu: {
        const float v = x[i];
        const float cdf = 0.5f * (1.0f + erff(v * kInvSqrt2));
        const float pdf = kInvSqrt2Pi * expf(-0.5f * v * v);
        dx[i] = g * (cdf + v * pdf);
        break;
      }
      case UnaryOp::kSigmoid:
        dx[i] = g * y[i] * (1.0f - y[i]);
        break;
      case UnaryOp::kTanh:
        dx[i] = g * (1.0f - y[i] * y[i]);
        break;
      case UnaryOp::kErf:
        dx[i] = g * kTwoOverSqrtPi * expf(-x[i] * x[i]);
        break;
      case UnaryOp::kNot:
        dx[i] = 0.0f;
        break;
    }
  }
}

__global__ void AxpbyKernel(float alpha, const float* x, float beta, float* y, int64_t n) {
  for (const int64_t i : GridStride(n)) {
    y[i] = beta == 0.0f ? alpha * x[i] : alpha * x[i] + beta * y[i];
  }
}

__global__ void FillKernel(float* y, float value, int64_t n) {
  for (const int64_t i : GridStride(n)) {
    y[i] = value;
  }
}

int64_t Elements(const TensorShape& shape) {
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  return n;
}

}  // namespace

Status BinaryForward(BinaryOp op, const float* a, const TensorShape& a_shape, const float* b,
                     const TensorShape& b_shape, float* out, cudaStream_t stream) {
  MEMPLAN_TRY(TensorShape out_shape, BroadcastShapes(a_shape, b_shape));
  const int64_t n = Elements(out_shape);
  if (n == 0) return OkStatus();
  const BroadcastGeometry g = MakeBroadcastGeometry(a_shape, b_shape, out_shape);
  BinaryKernel<<<BlocksFor(n), kThreadsPerBlock, 0, stream>>>(op, a, b, out, n, g);
  return CheckLaunch("BinaryKernel");
}

Status BinaryBackward(BinaryOp op, const float* a, const TensorShape& a_shape, const float* b,
                      const TensorShape& b_shape, const float* grad_out, float* da, float* db,
                      cudaStream_t stream) {
  MEMPLAN_TRY(TensorShape out_shape, BroadcastShapes(a_shape, b_shape));
  if (da != nullptr) {
    MEMPLAN_RETURN_IF_ERROR(CheckCuda(
        cudaMemsetAsync(da, 0, sizeof(float) * Elements(a_shape), stream), "cudaMemsetAsync(da)"));
  }
  if (db != nullptr) {
    MEMPLAN_RETURN_IF_ERROR(CheckCuda(
        cudaMemsetAsync(db, 0, sizeof(float) * Elements(b_shape), stream), "cudaMemsetAsync(db)"));
  }
  const int64_t n = Elements(out_shape);
  if (n == 0) return OkStatus();
  const BroadcastGeometry g = MakeBroadcastGeometry(a_shape, b_shape, out_shape);
  BinaryBackwardKernel<<<BlocksFor(n), kThreadsPerBlock, 0, stream>>>(op, a, b, grad_out, da, db, n,
                                                                      g);
  return CheckLaunch("BinaryBackwardKernel");
}

Status UnaryForward(UnaryOp op, const float* x, float* y, int64_t n, cudaStream_t stream) {
  if (n == 0) return OkStatus();
  UnaryKernel<<<BlocksFor(n), kThreadsPerBlock, 0, stream>>>(op, x, y, n);
  return CheckLaunch("UnaryKernel");
}

Status UnaryBackward(UnaryOp op, const float* x, const float* y, const float* dy, float* dx,
                     int64_t n, cudaStream_t stream) {
  if (n == 0) return OkStatus();
  UnaryBackwardKernel<<<BlocksFor(n), kThreadsPerBlock, 0, stream>>>(op, x, y, dy, dx, n);
  return CheckLaunch("UnaryBackwardKernel");
}

Status Axpby(float alpha, const float* x, float beta, float* y, int64_t n, cudaStream_t stream) {
  if (n == 0) return OkStatus();
  AxpbyKernel<<<BlocksFor(n), kThreadsPerBlock, 0, stream>>>(alpha, x, beta, y, n);
  return CheckLaunch("AxpbyKernel");
}

Status Fill(float* y, float value, int64_t n, cudaStream_t stream) {
  if (n == 0) return OkStatus();
  FillKernel<<<BlocksFor(n), kThreadsPerBlock, 0, stream>>>(y, value, n);
  return CheckLaunch("FillKernel");
}

}  // namespace memplan::cuda
