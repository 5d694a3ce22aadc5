// `memplan profile MODEL.onnx [plan flags] --out profile.json [--trace trace.json] [--steps N]`:
// runs the plan on the CUDA backend under the CUPTI collector, attributes the trace to program
// steps and nodes, and writes the measured profile (profiler/profile_json.h) and optionally a
// Chrome trace (profiler/chrome_trace.h). See docs/profiler.md.
//
// Profiling needs a GPU: a build without CUDA, or a machine without a device, exits 2 with
// "memplan profile: no CUDA device available (profiling needs a GPU)".
#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include "tools/memplan/analysis_session.h"
#include "tools/memplan/cli_common.h"
#include "tools/memplan/commands.h"
#include "tools/memplan/plan_flags.h"

#if defined(MEMPLAN_HAVE_CUDA) && __has_include("profiler/cupti/step_correlation.h")
#include <cuda_runtime_api.h>

#include "analyzer/program_derivation.h"
#include "profiler/attribution.h"
#include "profiler/chrome_trace.h"
#include "profiler/cupti/cupti_collector.h"
#include "profiler/cupti/step_correlation.h"
#include "profiler/profile_json.h"
#include "runtime/cuda/cuda_backend.h"
#include "runtime/cuda/cuda_status.h"
#include "runtime/executor.h"
#include "runtime/program_shapes.h"
#include "runtime/weight_init.h"
#define MEMPLAN_PROFILE_HAS_CUDA 1
#endif

namespace memplan::cli {
namespace {

struct ProfileFlags {
  PlanArguments plan;
  std::string out;
  std::string trace;
  int steps = 2;
};

#ifdef MEMPLAN_PROFILE_HAS_CUDA

// Device bytes in use right now (context, modules, earlier allocations).
int64_t DeviceBytesInUse() {
  size_t free_bytes = 0, total_bytes = 0;
  if (cudaMemGetInfo(&free_bytes, &total_bytes) != cudaSuccess) {
    (void)cudaGetLastError();
    return 0;
  }
  return static_cast<int64_t>(total_bytes - free_bytes);
}

std::string DeviceName() {
  int device = 0;
  cudaDeviceProp prop{};
  if (cudaGetDevice(&device) != cudaSuccess ||
      cudaGetDeviceProperties(&prop, device) != cudaSuccess) {
    (void)cudaGetLastError();
    return "cuda";
  }
  return prop.name;
}

struct ProfiledRun {
  profiler::ActivityTrace trace;
  profiler::StepTable steps;
  int64_t baseline_bytes = 0;
};

// Runs `steps` optimizer steps of the session's plan under CUPTI.
Expected<ProfiledRun> RunUnderCupti(const AnalysisSession& session, int steps) {
  ProgramOptions options = session.planner_used.program;
  options.accumulation_steps = session.plan.chosen.accumulation_steps;
  const int64_t micro_batch = session.plan.chosen.micro_batch;
  MEMPLAN_TRY(TrainingProgram program, DeriveTrainingProgram(session.graph, options));
  const Bindings bindings = WithBatch(session.plan.bindings, program.batch_symbol, micro_batch);

  ProfiledRun run;
  MEMPLAN_TRY(std::unique_ptr<profiler::CuptiCollector> collector,
              profiler::CuptiCollector::Start());
  profiler::AllocatorCorrelation allocator_correlation(*collector);
  CudaBackendOptions backend_options;
  backend_options.allocator_observer = &allocator_correlation;
  MEMPLAN_TRY(std::unique_ptr<Backend> cuda, MakeCudaBackend(backend_options));
  // The CUDA context exists now; what it holds is the baseline the trace cannot see.
  run.baseline_bytes = DeviceBytesInUse();
  profiler::StepCorrelatingBackend backend(*cuda, *collector, program);
  {
    MEMPLAN_TRY(SyntheticData data, SyntheticData::Create(session.graph, program, bindings, 0));
    std::vector<MicroBatch> batches;
    for (int64_t i = 0; i < program.accumulation_steps; ++i) {
      MEMPLAN_TRY(MicroBatch b, data.Batch(i * micro_batch, micro_batch));
      batches.push_back(std::move(b));
    }
    MEMPLAN_TRY(std::unique_ptr<Executor> executor,
                Executor::Create(session.graph, program, bindings, backend, ExecutorOptions{}));
    for (int s = 0; s < steps; ++s) {
      MEMPLAN_TRY(StepRecord record, executor->RunOptimizerStep(batches));
      (void)record;
    }
  }  // the executor releases its buffers inside the trace
  MEMPLAN_RETURN_IF_ERROR(backend.Finish());
  MEMPLAN_RETURN_IF_ERROR(allocator_correlation.status());
  MEMPLAN_TRY(run.trace, collector->Stop());
  run.steps = backend.steps();
  return run;
}

int RunProfile(const ProfileFlags& flags) {
  if (cuda::DeviceCount() == 0) {
    std::fprintf(stderr, "memplan profile: no CUDA device available (profiling needs a GPU)\n");
    return kExitUsage;
  }
  if (flags.steps < 1) return ReportError("--steps must be at least 1");
  auto request = ResolvePlanFlags(flags.plan, /*require_gpu=*/false);
  if (!request.ok()) return ReportError(request.error().message);
  Progress progress(request->analysis.format);
  auto session = RunAnalysisSession(*request, progress);
  if (!session.ok()) return ReportError(session.error().message);
  if (!(*session)->plan.feasible) return ReportError("the planner found no plan to profile");
  progress.Report("profiling the plan on the GPU...");
  auto run = RunUnderCupti(**session, flags.steps);
  if (!run.ok()) return ReportError(run.error().message);
  profiler::AttributionOptions attribution;
  attribution.baseline_device_bytes = run->baseline_bytes;
  auto profile = profiler::Attribute(run->trace, run->steps, attribution);
  if (!profile.ok()) return ReportError(profile.error().message);
  const profiler::ProfileSource source{request->analysis.model, DeviceName()};
  if (auto s = profiler::WriteProfile(flags.out, *profile, source); !s.ok())
    return ReportError(s.error().message);
  if (!flags.trace.empty()) {
    if (auto s = profiler::WriteChromeTrace(flags.trace, run->trace, run->steps, *profile); !s.ok())
      return ReportError(s.error().message);
  }
  std::printf(
      "profiled %zu step executions on %s: device peak %lld bytes, activations %lld "
      "bytes, %.6f s of device time\nwrote %s%s%s\n",
      run->steps.size(), source.device.c_str(), static_cast<long long>(profile->device_peak_bytes),
      static_cast<long long>(profile->activation_bytes), profile->device_seconds, flags.out.c_str(),
      flags.trace.empty() ? "" : " and ", flags.trace.c_str());
  return kExitSuccess;
}

#else

int RunProfile(const ProfileFlags& flags) {
  (void)flags;
  std::fprintf(stderr, "memplan profile: no CUDA device available (profiling needs a GPU)\n");
  return kExitUsage;
}

#endif

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
  command->add_option("--steps", flags->steps, "optimizer steps to trace (default 2)");
  return Verb{command, [flags] { return RunProfile(*flags); }};
}

}  // namespace memplan::cli
