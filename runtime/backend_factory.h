#pragma once
// Making a backend by the name `--device` takes. The build decides which backends exist: the CPU
// reference backend always; the CUDA backend when MEMPLAN_CUDA built it. CMake adds exactly one
// source file that defines AcceleratorBackends() (runtime/cuda/cuda_backend_registration.cc in a
// CUDA build, runtime/cpu_only_backend_registration.cc otherwise), so nothing in the code asks
// the preprocessor which backends there are.

#include <memory>
#include <string_view>
#include <vector>

#include "graph/expected.h"
#include "runtime/backend.h"

namespace memplan {

// The backend names `--device` accepts, "cpu" first.
std::vector<std::string_view> BackendNames();

// A fresh backend. Errors: a name BackendNames() lacks; "no CUDA device available" for "cuda" on
// a machine without a device (or a build without CUDA, which answers the same way).
Expected<std::unique_ptr<Backend>> MakeBackend(std::string_view name);

// One accelerator backend the build registers.
struct BackendRegistration {
  std::string_view name;  // "cuda"
  Expected<std::unique_ptr<Backend>> (*make)();
};

// Defined by the one registration source file CMake adds (see above).
std::vector<BackendRegistration> AcceleratorBackends();

}  // namespace memplan
