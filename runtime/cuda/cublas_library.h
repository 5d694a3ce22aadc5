#pragma once
// cuBLAS, opened on first use instead of linked. libcublas pulls in libcublasLt (over 500 MB),
// whose load-time initialisation cost every memplan command about 0.6 s of CPU, CUDA backend
// used or not. The CUDA backend is the only user, so the library is opened (dlopen) when it
// creates its first handle, and only the few entry points memplan calls are resolved.

#include <cublas_v2.h>

#include "graph/expected.h"

namespace memplan::cuda {

// cublas_api.h overloads this name in C++ (a cudaDataType compute-type variant), so the exported
// function's type is written out.
using CublasGemmStridedBatchedEx = cublasStatus_t (*)(
    cublasHandle_t, cublasOperation_t, cublasOperation_t, int, int, int, const void*, const void*,
    cudaDataType, int, long long, const void*, cudaDataType, int, long long, const void*, void*,
    cudaDataType, int, long long, int, cublasComputeType_t, cublasGemmAlgo_t);

struct CublasLibrary {
  decltype(&cublasCreate_v2) create = nullptr;
  decltype(&cublasDestroy_v2) destroy = nullptr;
  decltype(&cublasSetStream_v2) set_stream = nullptr;
  decltype(&cublasSetMathMode) set_math_mode = nullptr;
  CublasGemmStridedBatchedEx gemm_strided_batched = nullptr;
  decltype(&cublasGetStatusName) status_name = nullptr;
  decltype(&cublasGetStatusString) status_string = nullptr;
};

// The library, opened once per process (the soname of the toolkit memplan was built with, then
// the toolkit's library folder). Error: it cannot be opened or lacks an entry point, named with
// the loader's message.
Expected<const CublasLibrary*> LoadCublas();

}  // namespace memplan::cuda
