#include "runtime/cuda/cuda_status.h"

#include "runtime/cuda/cublas_library.h"

namespace memplan::cuda {

Status CheckCuda(cudaError_t result, const std::string& call) {
  if (result == cudaSuccess) return OkStatus();
  return MakeError(call + " failed: " + cudaGetErrorName(result) + " (" +
                   cudaGetErrorString(result) + ")");
}

Status CheckCublas(cublasStatus_t result, const std::string& call) {
  if (result == CUBLAS_STATUS_SUCCESS) return OkStatus();
  Expected<const CublasLibrary*> library = LoadCublas();
  if (!library) {  // cannot happen after a call into cuBLAS; the code is all there is to say
    return MakeError(call + " failed: cuBLAS status " + std::to_string(static_cast<int>(result)));
  }
  return MakeError(call + " failed: " + (*library)->status_name(result) + " (" +
                   (*library)->status_string(result) + ")");
}

Status CheckLaunch(const std::string& kernel) {
  return CheckCuda(cudaGetLastError(), "launch of " + kernel);
}

}  // namespace memplan::cuda
