// runtime/backend_factory.h for a build with CUDA: registers the CUDA backend.
#include "runtime/backend_factory.h"
#include "runtime/cuda/cuda_backend.h"

namespace memplan {
namespace {

Expected<std::unique_ptr<Backend>> MakeDefaultCudaBackend() { return MakeCudaBackend(); }

}  // namespace

std::vector<BackendRegistration> AcceleratorBackends() {
  return {{"cuda", &MakeDefaultCudaBackend}};
}

}  // namespace memplan
