// `memplan profile MODEL.onnx [plan flags] --out profile.json [--trace trace.json]`: runs the
// plan on the CUDA backend under the CUPTI collector, attributes the trace to program steps and
// writes the measured profile (profiler/profile_json.h) and optionally a Chrome trace.
//
// Profiling needs a GPU: a build without CUDA, or a machine without a device, exits 2 with
// "memplan profile: no CUDA device available (profiling needs a GPU)".
#include <cstdio>
#include <memory>
#include <string>

#include "tools/memplan/cli_common.h"
#include "tools/memplan/commands.h"
#include "tools/memplan/plan_flags.h"

#if defined(MEMPLAN_HAVE_CUDA)
#include "runtime/cuda/cuda_status.h"
#endif

namespace memplan::cli {
namespace {

struct ProfileFlags {
  PlanFlags plan;
  std::string out;
  std::string trace;
};

// Whether this build can reach a CUDA device (the one build-option switch in this verb).
bool CudaDeviceAvailable() {
#if defined(MEMPLAN_HAVE_CUDA)
  return cuda::DeviceCount() > 0;
#else
  return false;
#endif
}

int RunProfile(const ProfileFlags& flags) {
  if (!CudaDeviceAvailable()) {
    std::fprintf(stderr, "memplan profile: no CUDA device available (profiling needs a GPU)\n");
    return kExitUsage;
  }
  auto request = ResolvePlanFlags(flags.plan, /*require_gpu=*/false);
  if (!request.ok()) return ReportError(request.error().message);
  // The CUDA backend (runtime/cuda) has its kernels, GEMM and device allocator, but no
  // Backend implementation the executor can run a training program on yet, and the executor has
  // no per-step hook to push CUPTI external correlation ids; see docs/profiler.md.
  std::fprintf(
      stderr, "memplan profile: the CUDA backend cannot run training programs in this build yet\n");
  return kExitUsage;
}

}  // namespace

Verb AddProfileCommand(CLI::App& app) {
  CLI::App* command = app.add_subcommand("profile", "trace a step with CUPTI and attribute memory");
  auto flags = std::make_shared<ProfileFlags>();
  AddPlanFlags(*command, flags->plan);
  command->add_option("--out", flags->out, "write the measured profile (JSON) here")
      ->required()
      ->type_name("profile.json");
  command->add_option("--trace", flags->trace, "also write a Chrome/Perfetto trace here")
      ->type_name("trace.json");
  return Verb{command, [flags] { return RunProfile(*flags); }};
}

}  // namespace memplan::cli
