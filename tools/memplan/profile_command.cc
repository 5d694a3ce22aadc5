// `memplan profile MODEL.onnx [plan flags] --out profile.json [--trace trace.json] [--steps N]`:
// runs the plan on the CUDA backend under the CUPTI collector, attributes the trace to program
// steps and nodes, and writes the measured profile (profiler/profile_json.h) and optionally a
// Chrome trace (profiler/chrome_trace.h). See docs/profiler.md.
//
// Profiling needs a GPU: a build without CUDA, or a machine without a device, exits 2 with
// "memplan: no CUDA device available (profiling needs a GPU)". The output paths are checked
// before any work. The GPU work itself lives
// in profiler/gpu_profiling.h; this file only reads flags and writes files.
#include <cstdio>
#include <memory>
#include <string>

#include "analyzer/derivation/program_derivation.h"
#include "analyzer/pipeline/analysis_session.h"
#include "profiler/attribution.h"
#include "profiler/chrome_trace.h"
#include "profiler/gpu_profiling.h"
#include "profiler/profile_json.h"
#include "tools/memplan/cli_common.h"
#include "tools/memplan/commands.h"
#include "tools/memplan/plan_flags.h"

namespace memplan::cli {
namespace {

struct ProfileFlags {
  PlanArguments plan;
  std::string out;
  std::string trace;
  int steps = 2;
};

// Runs `steps` optimizer steps of the session's plan under CUPTI.
Expected<profiler::ProfiledRun> ProfileSessionPlan(const AnalysisSession& session, int steps) {
  ProgramOptions options = session.planner_used.program;
  options.accumulation_steps = session.plan.chosen.accumulation_steps;
  MEMPLAN_TRY(TrainingProgram program, DeriveTrainingProgram(session.graph, options));
  return profiler::ProfileOnGpu(session.graph, program, session.plan.bindings,
                                session.plan.chosen.micro_batch, steps);
}

int RunProfile(const ProfileFlags& flags) {
  if (flags.steps < 1) return ReportError("--steps must be at least 1");
  if (auto s = CheckOutputPath("--out", flags.out); !s.ok()) return ReportError(s.error().message);
  if (Status apart = CheckOutputsApart({{"the model", flags.plan.analysis.model}},
                                       {{"--out", flags.out}, {"--trace", flags.trace}});
      !apart.ok())
    return ReportError(apart.error().message);
  if (!flags.trace.empty()) {
    if (auto s = CheckOutputPath("--trace", flags.trace); !s.ok())
      return ReportError(s.error().message);
  }
  if (!profiler::GpuProfilingAvailable()) return ReportError(profiler::kNoGpuForProfiling);
  auto request = ResolvePlanFlags(flags.plan, /*require_gpu=*/false);
  if (!request.ok()) return ReportError(request.error().message);
  Progress progress(request->analysis.format);
  auto session = RunAnalysisSession(*request, progress);
  if (!session.ok()) return ReportError(session.error().message);
  if (!(*session)->plan.feasible) return ReportError("the planner found no plan to profile");
  progress.Report("profiling the plan on the GPU...");
  auto run = ProfileSessionPlan(**session, flags.steps);
  if (!run.ok()) return ReportError(run.error().message);
  profiler::AttributionOptions attribution;
  attribution.baseline_device_bytes = run->baseline_device_bytes;
  auto profile = profiler::Attribute(run->trace, run->steps, attribution);
  if (!profile.ok()) return ReportError(profile.error().message);
  const profiler::ProfileSource source{request->analysis.model, run->device_name};
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
