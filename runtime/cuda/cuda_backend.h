#pragma once
// The CUDA backend: the Backend interface (runtime/backend.h) on one GPU.
//
//  * Memory: program buffers come from an instrumented DeviceAllocator (cudaMalloc, never managed
//    memory) in pass-through mode, accounted in each dtype's bytes; kernel temporaries, constants
//    and view results come from a second, caching allocator reported as scratch. Out of memory
//    fails with "out of memory at <step> (<node>): needed X, free Y" (the executor names the step
//    through Backend::EnterStep).
//  * Storage: runtime/cuda/cuda_storage.h (floats in their dtype, integers and bools as fp32).
//  * Kernels: MatMul/Gemm on cuBLAS (fp16/bf16 on tensor cores), Conv by im2col + GEMM, own
//    kernels for the rest (runtime/cuda/ops/*.cc lists them). An op without a CUDA implementation
//    fails with "the cuda backend has no kernel for <op>"; nothing falls back silently, except
//    that ops whose inputs are all constants (shape arithmetic) are folded on the host with the
//    CPU reference kernels, as the executor folds constants anyway.
//  * Every CUDA/cuBLAS call is checked; kernels run on one stream, in program order. Downloads,
//    overflow checks and norms synchronize.

#include <memory>

#include "graph/expected.h"
#include "runtime/backend.h"

namespace memplan {

namespace cuda {
class DeviceCallObserver;
}

struct CudaBackendOptions {
  // Told about every cudaMalloc/cudaFree of a program buffer, so a profiler can tell the
  // allocator's device allocations from library ones (profiler/cupti/step_correlation.h).
  // REQUIRES: outlives the backend. Null: nobody is told.
  cuda::DeviceCallObserver* allocator_observer = nullptr;
};

// A CUDA backend on the current device. Errors: "no CUDA device available" (no driver, no
// device), or the CUDA/cuBLAS call that failed while setting up.
Expected<std::unique_ptr<Backend>> MakeCudaBackend(const CudaBackendOptions& options = {});

}  // namespace memplan
