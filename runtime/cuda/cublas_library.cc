#include "runtime/cuda/cublas_library.h"

#include <dlfcn.h>

#include <mutex>
#include <string>

namespace memplan::cuda {
namespace {

// Set by runtime/CMakeLists.txt from the toolkit found at configure time.
constexpr const char* kSoname = MEMPLAN_CUBLAS_SONAME;
constexpr const char* kToolkitLibraryDir = MEMPLAN_CUDA_LIBRARY_DIR;

void* OpenLibrary(std::string& error) {
  // RTLD_NODELETE: handles outlive any owner here; the process keeps the library to its end.
  const int flags = RTLD_NOW | RTLD_LOCAL | RTLD_NODELETE;
  if (void* handle = dlopen(kSoname, flags)) return handle;
  error = dlerror();
  const std::string in_toolkit = std::string(kToolkitLibraryDir) + "/" + kSoname;
  if (void* handle = dlopen(in_toolkit.c_str(), flags)) return handle;
  return nullptr;
}

template <typename Function>
bool Resolve(void* library, const char* symbol, Function& out, std::string& missing) {
  out = reinterpret_cast<Function>(dlsym(library, symbol));
  if (out == nullptr && missing.empty()) missing = symbol;
  return out != nullptr;
}

struct LoadResult {
  CublasLibrary library;
  std::string error;
};

LoadResult Load() {
  LoadResult result;
  std::string open_error;
  void* handle = OpenLibrary(open_error);
  if (handle == nullptr) {
    result.error = std::string("cannot open cuBLAS (") + kSoname + "): " + open_error;
    return result;
  }
  // The exported names of the _v2 API (cublas_v2.h maps cublasCreate to cublasCreate_v2).
  std::string missing;
  CublasLibrary& lib = result.library;
  Resolve(handle, "cublasCreate_v2", lib.create, missing);
  Resolve(handle, "cublasDestroy_v2", lib.destroy, missing);
  Resolve(handle, "cublasSetStream_v2", lib.set_stream, missing);
  Resolve(handle, "cublasSetMathMode", lib.set_math_mode, missing);
  Resolve(handle, "cublasGemmStridedBatchedEx", lib.gemm_strided_batched, missing);
  Resolve(handle, "cublasGetStatusName", lib.status_name, missing);
  Resolve(handle, "cublasGetStatusString", lib.status_string, missing);
  if (!missing.empty()) {
    result.error = std::string("cuBLAS (") + kSoname + ") lacks " + missing;
  }
  return result;
}

}  // namespace

Expected<const CublasLibrary*> LoadCublas() {
  static const LoadResult loaded = Load();  // thread-safe, once per process
  if (!loaded.error.empty()) return MakeError(loaded.error);
  return &loaded.library;
}

}  // namespace memplan::cuda
