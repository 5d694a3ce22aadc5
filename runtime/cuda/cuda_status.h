#pragma once
// CUDA / cuBLAS status codes -> memplan Errors. Every call into CUDA in runtime/cuda
// goes through one of these, so a failure names the call that failed:
//   "cudaMemcpy(download) failed: cudaErrorIllegalAddress (an illegal memory access ...)".

#include <cublas_v2.h>
#include <cuda_runtime_api.h>

#include <string>

#include "graph/expected.h"

namespace memplan::cuda {

Status CheckCuda(cudaError_t result, const std::string& call);
Status CheckCublas(cublasStatus_t result, const std::string& call);

// The last launch error (cudaGetLastError), named after the kernel: kernels report failures only
// through it.
Status CheckLaunch(const std::string& kernel);

}  // namespace memplan::cuda
