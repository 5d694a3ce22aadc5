#include "runtime/cuda/cuda_status.h"

namespace memplan::cuda {

Status CheckCuda(cudaError_t result, const std::string& call) {
  if (result == cudaSuccess) return OkStatus();
  return MakeError(call + " failed: " + cudaGetErrorName(result) + " (" +
                   cudaGetErrorString(result) + ")");
}

Status CheckCublas(cublasStatus_t result, const std::string& call) {
  if (result == CUBLAS_STATUS_SUCCESS) return OkStatus();
  return MakeError(call + " failed: " + cublasGetStatusName(result) + " (" +
                   cublasGetStatusString(result) + ")");
}

Status CheckLaunch(const std::string& kernel) {
  return CheckCuda(cudaGetLastError(), "launch of " + kernel);
}

}  // namespace memplan::cuda
