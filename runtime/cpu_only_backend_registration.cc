// runtime/backend_factory.h for a build without CUDA. "cuda" stays a known name and answers as a
// machine without a device would, so `--device cuda` fails with the same message in every build.
#include "runtime/backend_factory.h"

namespace memplan {
namespace {

Expected<std::unique_ptr<Backend>> NoCudaDevice() { return MakeError("no CUDA device available"); }

}  // namespace

std::vector<BackendRegistration> AcceleratorBackends() { return {{"cuda", &NoCudaDevice}}; }

}  // namespace memplan
