#pragma once
// GEMM for MatMul and Gemm through cublasGemmStridedBatchedEx: fp16/bf16 inputs run on tensor
// cores with fp32 accumulation (CUBLAS_COMPUTE_32F), fp32 inputs in plain fp32 (no TF32, so
// results compare with the CPU reference). Matrices are row-major, as ONNX tensors are; the
// column-major cuBLAS call computes C^T = op(B)^T op(A)^T.

#include <cublas_v2.h>
#include <cuda_runtime_api.h>

#include <cstdint>
#include <memory>

#include "graph/dtype.h"
#include "graph/expected.h"
#include "runtime/cuda/cublas_library.h"

namespace memplan::cuda {

// An owned cuBLAS handle bound to a stream.
class BlasHandle {
 public:
  // Opens cuBLAS on the first call in the process (runtime/cuda/cublas_library.h).
  static Expected<std::unique_ptr<BlasHandle>> Create(cudaStream_t stream);
  ~BlasHandle();
  BlasHandle(const BlasHandle&) = delete;
  BlasHandle& operator=(const BlasHandle&) = delete;
  cublasHandle_t get() const { return handle_; }
  const CublasLibrary& library() const { return library_; }

 private:
  BlasHandle(const CublasLibrary& library, cublasHandle_t handle)
      : library_(library), handle_(handle) {}
  const CublasLibrary& library_;
  cublasHandle_t handle_;
};

// C[b] (m x n) = alpha * op(A[b]) (m x k) * op(B[b]) (k x n) + beta * C[b], for b < batch.
// A is stored m x k (k x m when transpose_a), B k x n (n x k when transpose_b), C m x n, each
// batch `stride_*` elements after the previous (0 broadcasts one matrix over the batch).
struct GemmShape {
  int64_t m = 0;
  int64_t n = 0;
  int64_t k = 0;
  bool transpose_a = false;
  bool transpose_b = false;
  int64_t batch = 1;
  int64_t stride_a = 0;
  int64_t stride_b = 0;
  int64_t stride_c = 0;
};

// A, B and C share `dtype`: float32, float16 or bfloat16. Errors: another dtype, sizes beyond
// cuBLAS's int range, any cuBLAS failure.
Status Gemm(const BlasHandle& blas, const GemmShape& shape, DType dtype, float alpha, const void* a,
            const void* b, float beta, void* c);

}  // namespace memplan::cuda
