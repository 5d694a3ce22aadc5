// cuBLAS is opened when the CUDA backend first needs it, not at process start: linking it made
// every memplan command pay libcublasLt's load-time initialisation (about 0.6 s of CPU).
// Runs wherever the toolkit is installed; opening the library needs no GPU.

#include "runtime/cuda/cublas_library.h"

#include <dlfcn.h>

#include <string>

#include <catch2/catch.hpp>

namespace memplan::cuda {
namespace {

bool CublasInProcess() {
  // RTLD_NOLOAD opens nothing: it only answers whether the library is already in the process.
  void* handle = dlopen(MEMPLAN_TEST_CUBLAS_SONAME, RTLD_NOW | RTLD_NOLOAD);
  if (handle != nullptr) dlclose(handle);
  return handle != nullptr;
}

// Taken before any test runs (another test may open cuBLAS first): this binary links the whole
// CUDA backend and the CUPTI collector, and none of it may bring cuBLAS in at load.
const bool kCublasLoadedAtStart = CublasInProcess();

TEST_CASE("cuBLAS is opened on first use with every entry point", "[cuda]") {
  CHECK_FALSE(kCublasLoadedAtStart);
  Expected<const CublasLibrary*> library = LoadCublas();
  REQUIRE(library.ok());
  CHECK(CublasInProcess());
  const CublasLibrary& lib = **library;
  CHECK(lib.create != nullptr);
  CHECK(lib.destroy != nullptr);
  CHECK(lib.set_stream != nullptr);
  CHECK(lib.set_math_mode != nullptr);
  CHECK(lib.gemm_strided_batched != nullptr);
  CHECK(std::string(lib.status_name(CUBLAS_STATUS_INVALID_VALUE)) == "CUBLAS_STATUS_INVALID_VALUE");
  // Once per process: the same table on every call.
  Expected<const CublasLibrary*> again = LoadCublas();
  REQUIRE(again.ok());
  CHECK(*again == *library);
}

}  // namespace
}  // namespace memplan::cuda
