#include "runtime/cuda/gemm.h"

#include <limits>
#include <string>

#include "runtime/cuda/cuda_status.h"

namespace memplan::cuda {
namespace {

Expected<cudaDataType_t> CublasType(DType dtype) {
  switch (dtype) {
    case DType::kFloat32:
      return CUDA_R_32F;
    case DType::kFloat16:
      return CUDA_R_16F;
    case DType::kBFloat16:
      return CUDA_R_16BF;
    default:
      return MakeError("GEMM: unsupported dtype " + std::string(DTypeName(dtype)) +
                       " (float32, float16, bfloat16)");
  }
}

bool FitsInt(int64_t v) { return v >= 0 && v <= std::numeric_limits<int>::max(); }

}  // namespace

Expected<std::unique_ptr<BlasHandle>> BlasHandle::Create(cudaStream_t stream) {
  MEMPLAN_TRY(const CublasLibrary* library, LoadCublas());
  cublasHandle_t handle = nullptr;
  MEMPLAN_RETURN_IF_ERROR(CheckCublas(library->create(&handle), "cublasCreate"));
  std::unique_ptr<BlasHandle> owned(new BlasHandle(*library, handle));
  MEMPLAN_RETURN_IF_ERROR(CheckCublas(library->set_stream(handle, stream), "cublasSetStream"));
  // fp32 GEMMs must match the CPU reference: no TF32 down-conversion.
  MEMPLAN_RETURN_IF_ERROR(
      CheckCublas(library->set_math_mode(handle, CUBLAS_DEFAULT_MATH), "cublasSetMathMode"));
  return owned;
}

BlasHandle::~BlasHandle() { (void)library_.destroy(handle_); }

Status Gemm(const BlasHandle& blas, const GemmShape& s, DType dtype, float alpha, const void* a,
            const void* b, float beta, void* c) {
  MEMPLAN_TRY(cudaDataType_t type, CublasType(dtype));
  if (!FitsInt(s.m) || !FitsInt(s.n) || !FitsInt(s.k) || !FitsInt(s.batch)) {
    return MakeError("GEMM: dimensions beyond cuBLAS's int range (m=" + std::to_string(s.m) +
                     ", n=" + std::to_string(s.n) + ", k=" + std::to_string(s.k) + ")");
  }
  if (s.m == 0 || s.n == 0 || s.batch == 0) return OkStatus();
  // Row-major X is column-major X^T, so C^T (n x m) = op(B)^T (n x k) * op(A)^T (k x m).
  const int m = static_cast<int>(s.m);
  const int n = static_cast<int>(s.n);
  const int k = static_cast<int>(s.k);
  const int lda = s.transpose_a ? m : k;
  const int ldb = s.transpose_b ? k : n;
  const cublasOperation_t op_a = s.transpose_a ? CUBLAS_OP_T : CUBLAS_OP_N;
  const cublasOperation_t op_b = s.transpose_b ? CUBLAS_OP_T : CUBLAS_OP_N;
  return CheckCublas(blas.library().gemm_strided_batched(
                         blas.get(), op_b, op_a, n, m, k, &alpha, b, type, ldb, s.stride_b, a, type,
                         lda, s.stride_a, &beta, c, type, n, s.stride_c, static_cast<int>(s.batch),
                         CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT),
                     "cublasGemmStridedBatchedEx(" + std::to_string(s.m) + "x" +
                         std::to_string(s.k) + " * " + std::to_string(s.k) + "x" +
                         std::to_string(s.n) + ", batch " + std::to_string(s.batch) + ")");
}

}  // namespace memplan::cuda
