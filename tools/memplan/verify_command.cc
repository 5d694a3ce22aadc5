// `memplan verify model.onnx [--plan plan.json | plan flags] [--device cpu|cuda] [--steps N]
// [--tolerance 1%] [--max-cpu-memory 8G] [--json]`: runs the plan on the bundled runtime and
// compares measured memory, gradients and training with the simulator (docs/verify.md).
// Exit 0 when every check passes, 1 when one fails, 2 on bad input (one line on stderr).
#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <functional>
#include <limits>
#include <memory>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "analyzer/baseline/json_file.h"
#include "analyzer/config_export/plan_json_fields.h"
#include "analyzer/derivation/attention_plan.h"
#include "analyzer/derivation/fused_loss_plan.h"
#include "analyzer/pipeline/analysis_session.h"
#include "analyzer/pipeline/planned_model.h"
#include "analyzer/recompute/module_units.h"
#include "analyzer/text/memory_size.h"
#include "analyzer/text/tolerance.h"
#include "analyzer/vocabulary/optimizer_impl.h"
#include "graph/bind_symbols.h"
#include "graph/checked_math.h"
#include "runtime/backend_factory.h"
#include "runtime/verification.h"
#include "tools/memplan/cli_common.h"
#include "tools/memplan/commands.h"
#include "tools/memplan/plan_flags.h"
#include "tools/memplan/verify_output.h"
#include "tools/memplan/verify_plan_reader.h"

namespace memplan::cli {
namespace {

struct VerifyFlags {
  PlanArguments plan;
  std::string plan_file;
  std::string device = "cpu";
  int steps = 3;
  std::string tolerance = "1%";
  std::string max_cpu_memory = "8G";
  std::string seed = "0";
  std::string learning_rate;  // empty: the optimizer's default
};

// --seed: a whole number from 0 to 2^64 - 1 (CLI11 would wrap "-1" to 2^64 - 1).
Expected<uint64_t> ParseSeed(const std::string& text) {
  uint64_t value = 0;
  const char* end = text.data() + text.size();
  auto [stop, error] = std::from_chars(text.data(), end, value);
  if (text.empty() || error != std::errc() || stop != end)
    return MakeError("--seed: expected a whole number from 0 to 2^64-1, got '" + text + "'");
  return value;
}

// --learning-rate: a finite number above 0 (nan, inf and negatives would train nothing or diverge
// and still report a verdict).
Expected<double> ParseLearningRate(const std::string& text) {
  double value = 0.0;
  const char* end = text.data() + text.size();
  auto [stop, error] = std::from_chars(text.data(), end, value);
  if (text.empty() || error != std::errc() || stop != end || !std::isfinite(value) || value <= 0)
    return MakeError("--learning-rate: expected a finite number above 0, got '" + text + "'");
  return value;
}

// Micro-batches verify runs one by one. Peak memory is the same for every accumulation count from
// 2 up, so a plan beyond this is verified as well with a smaller --global-batch; past it a
// mistyped plan would run for hours (issue 14: 2^62 accumulation steps never ended).
constexpr int64_t kMaxVerifiedMicroBatches = 4096;

// A plan from the flags alone: a fixed micro-batch (--batch / --micro-batch) and the options.
Expected<VerifyPlan> PlanFromFlags(const Graph& graph, const PlanRequest& request,
                                   const PlanArguments& flags) {
  VerifyPlan plan;
  plan.micro_batch = *request.planner.micro_batch;
  plan.program = request.planner.program;
  if (request.search.precision == PrecisionChoice::kAuto)
    return MakeError("--precision auto needs the planner: give --gpu, or a precision");
  if (request.parallel_auto)
    return MakeError("--parallel auto needs the planner: give --gpu, or a strategy");
  const int64_t m = plan.micro_batch;
  // The global batch is micro-batch x accumulation x data-parallel ranks (docs/multi_gpu.md).
  const int64_t ranks = plan.program.data_parallel ? plan.program.data_parallel->ranks : 1;
  if (request.planner.global_batch) {
    const int64_t per_step = CheckedMul(m, ranks).value_or(0);
    if (per_step == 0 || *request.planner.global_batch % per_step != 0)
      return MakeError("--global-batch " + std::to_string(*request.planner.global_batch) +
                       " is not a multiple of the micro-batch " + std::to_string(m) +
                       (ranks > 1 ? " x " + std::to_string(ranks) + " GPUs" : ""));
    plan.program.accumulation_steps = *request.planner.global_batch / per_step;
  }
  switch (request.search.recompute) {
    case RecomputeChoice::kNone:
      break;
    case RecomputeChoice::kAll:
      for (size_t n = 0; n < graph.num_nodes(); ++n) plan.program.recompute.push_back(NodeId(n));
      break;
    default:
      return MakeError("--recompute " + flags.Text("recompute") +
                       " needs the planner: give --gpu, or --recompute none|all");
  }
  MEMPLAN_TRY(plan.bindings, BindSymbols(graph, std::nullopt, request.analysis.dims));
  return plan;
}

BackendFactory BackendFor(const std::string& device) {
  return [device] { return MakeBackend(device); };
}

// What the runtime cannot execute of a request (planned only), refused before any work.
Status CheckExecutable(const PlanRequest& request, const std::string& device) {
  const std::vector<std::string_view> devices = BackendNames();
  if (std::find(devices.begin(), devices.end(), device) == devices.end()) {
    std::string names;
    for (std::string_view d : devices) names += (names.empty() ? "" : " or ") + std::string(d);
    return MakeError("--device must be " + names + ", got '" + device + "'");
  }
  if (const auto& base = request.planner.program.base_dtype;
      base && (*base == BaseDType::kInt8 || *base == BaseDType::kNf4))
    return MakeError("verify: the runtime does not execute --base-dtype " +
                     std::string(BaseDTypeName(*base)) +
                     " (quantised weights are planned only); verify with --base-dtype bf16");
  if (const OffloadMode offload = request.planner.program.offload.mode;
      offload != OffloadMode::kNone)
    return MakeError("verify: the runtime does not execute --offload " +
                     std::string(OffloadModeName(offload)) +
                     " (host memory and its copies are planned only); verify without --offload");
  if (request.tensor_parallel > 1)
    return MakeError(std::string("verify: ") + kTensorParallelNotExecuted);
  return OkStatus();
}

// --steps, --seed, --tolerance, --max-cpu-memory and --learning-rate, validated.
Expected<VerifyOptions> VerifyOptionsOf(const VerifyFlags& flags) {
  VerifyOptions options;
  options.steps = flags.steps;
  MEMPLAN_TRY(options.seed, ParseSeed(flags.seed));
  if (flags.steps < 1) return MakeError("--steps must be at least 1");
  Expected<Tolerance> tolerance = ParseTolerance(flags.tolerance);
  Expected<double> fraction =
      tolerance.ok() ? RelativeFraction(*tolerance) : Expected<double>(tolerance.error());
  if (!fraction.ok()) return MakeError("--tolerance: " + fraction.error().message);
  options.tolerance = *fraction;
  auto limit = ParseMemorySize(flags.max_cpu_memory);
  if (!limit.ok()) return MakeError("--max-cpu-memory: " + limit.error().message);
  options.max_memory_bytes = flags.device == "cpu" ? *limit : std::numeric_limits<int64_t>::max();
  if (!flags.learning_rate.empty()) {
    MEMPLAN_TRY(options.executor.optimizer.learning_rate, ParseLearningRate(flags.learning_rate));
  }
  return options;
}

// The plan verify runs and the graph it runs on, from one of three sources: a saved plan
// (--plan), the flags alone (--batch / --micro-batch without --gpu), or the planner (--gpu).
struct PlanToVerify {
  Graph graph;                               // the model, unless `session` holds it
  LoadedPlan loaded;                         // the plan and, for --fused-loss, its reference
  std::unique_ptr<AnalysisSession> session;  // --gpu: the analysis that chose the plan
  std::string source;                        // VerifiedPlanInfo::plan_source
  const Graph& RunGraph() const { return session ? session->graph : graph; }
};

Status PlanFromFile(const PlanRequest& request, const std::string& path, PlanToVerify& out) {
  MEMPLAN_TRY(out.graph, LoadPlannedModel(request));
  MEMPLAN_TRY(out.loaded, PlanFromJson(out.graph, path, request));
  out.source = "--plan " + path;
  return OkStatus();
}

Status PlanFromFlagsAlone(const PlanRequest& request, const PlanArguments& flags,
                          const std::function<Status(Graph&)>& attention, PlanToVerify& out) {
  MEMPLAN_TRY(out.graph, LoadPlannedModel(request));
  // Prepared as analyze prepares it (--attention, the --dim values, --fused-loss); the request
  // then plans the fused loss, the reference keeps the one asked.
  PlanRequest prepared = request;
  MEMPLAN_TRY(ModelRewrites rewrites, PrepareLoadedModel(out.graph, prepared));
  if (rewrites.fused_loss.fused()) {
    MEMPLAN_RETURN_IF_ERROR(
        LoadUnfusedReference(request, request.planner.program.loss, attention, out.loaded));
  }
  MEMPLAN_TRY(VerifyPlan plan, PlanFromFlags(out.graph, prepared, flags));
  plan.unfused_graph = out.loaded.plan.unfused_graph;
  plan.unfused_loss = out.loaded.plan.unfused_loss;
  out.loaded.plan = std::move(plan);
  out.source = "flags";
  return OkStatus();
}

Status PlanFromPlanner(const PlanRequest& request, const std::string& gpu,
                       const std::function<Status(Graph&)>& attention, const Progress& progress,
                       PlanToVerify& out) {
  MEMPLAN_TRY(out.session, RunAnalysisSession(request, progress));
  const AnalysisSession& session = *out.session;
  if (!session.plan.feasible)
    return MakeError("the planner found no plan that fits " + gpu + "; nothing to verify");
  // The session fused its graph; the reference is the model imported again, unfused.
  if (session.fused_loss.fused()) {
    MEMPLAN_RETURN_IF_ERROR(
        LoadUnfusedReference(request, request.planner.program.loss, attention, out.loaded));
  }
  VerifyPlan& plan = out.loaded.plan;
  plan.program = session.planner_used.program;
  plan.program.accumulation_steps = session.plan.chosen.accumulation_steps;
  plan.micro_batch = session.plan.chosen.micro_batch;
  plan.bindings = session.plan.bindings;
  out.source = "the planner (--gpu " + gpu + ")";
  return OkStatus();
}

Status ChoosePlan(const VerifyFlags& flags, const PlanRequest& request, const Progress& progress,
                  PlanToVerify& out) {
  auto attention = [&request](Graph& g) -> Status {
    MEMPLAN_RETURN_IF_ERROR(ApplyRequestedAttention(g, request));
    return OkStatus();
  };
  const std::string& gpu = flags.plan.Text("gpu");
  if (!flags.plan_file.empty()) return PlanFromFile(request, flags.plan_file, out);
  if (request.planner.micro_batch && gpu.empty())
    return PlanFromFlagsAlone(request, flags.plan, attention, out);
  if (!gpu.empty()) return PlanFromPlanner(request, gpu, attention, progress, out);
  return MakeError("verify needs a plan: --plan plan.json, --batch N, or --gpu to plan one");
}

// What the chosen plan asks that verify will not run.
Status CheckRunnable(const VerifyPlan& plan, const std::string& device) {
  if (plan.program.accumulation_steps > kMaxVerifiedMicroBatches)
    return MakeError("the plan accumulates " + std::to_string(plan.program.accumulation_steps) +
                     " micro-batches per step; verify runs each one and takes at most " +
                     std::to_string(kMaxVerifiedMicroBatches) +
                     " (peak memory is the same from 2 up: verify a smaller global batch)");
  // The fused loss has a CPU reference kernel only (runtime/cpu/kernels/fused_loss.cc).
  if (plan.unfused_graph != nullptr && device != "cpu")
    return MakeError("--fused-loss: the " + device +
                     " backend has no kernel for Liger's fused linear cross entropy; verify "
                     "the plan with --device cpu");
  return OkStatus();
}

int RunVerify(const VerifyFlags& flags) {
  Expected<PlanRequest> request = ResolvePlanFlags(flags.plan, /*require_gpu=*/false);
  if (!request.ok()) return ReportError(request.error().message);
  if (Status executable = CheckExecutable(*request, flags.device); !executable.ok())
    return ReportError(executable.error().message);
  const BackendFactory backends = BackendFor(flags.device);
  if (flags.device != "cpu") {
    // Fail before any work when there is no device.
    auto probe = backends();
    if (!probe.ok()) return ReportError(probe.error().message);
  }
  Expected<VerifyOptions> options = VerifyOptionsOf(flags);
  if (!options.ok()) return ReportError(options.error().message);

  Progress progress(request->analysis.format);
  PlanToVerify chosen;
  if (Status planned = ChoosePlan(flags, *request, progress, chosen); !planned.ok())
    return ReportError(planned.error().message);
  const VerifyPlan& plan = chosen.loaded.plan;
  if (Status runnable = CheckRunnable(plan, flags.device); !runnable.ok())
    return ReportError(runnable.error().message);
  const Graph& g = chosen.RunGraph();
  VerifiedPlanInfo info;
  info.model = request->analysis.model;
  info.plan_source = chosen.source;
  info.program = plan.program;
  info.fused_loss = plan.unfused_graph != nullptr;
  for (NodeId n : plan.program.recompute) info.recompute.push_back(g.node(n).name);

  progress.Report("running the plan on " + flags.device + "...");
  auto report = VerifyPlanOnBackend(g, plan, backends, *options);
  if (!report.ok()) return ReportError(report.error().message);
  std::string out = request->analysis.format == OutputFormat::kJson
                        ? VerificationToJson(*report, info).dump(2) + "\n"
                        : FormatVerificationText(*report, info);
  if (Status written = WriteStdout(out); !written.ok()) return ReportError(written.error().message);
  return report->passed ? kExitSuccess : kExitCheckFailed;
}

}  // namespace

Verb AddVerifyCommand(CLI::App& app) {
  CLI::App* command =
      app.add_subcommand("verify", "run the plan on the runtime, compare measured memory");
  auto flags = std::make_shared<VerifyFlags>();
  // verify runs a plan, with or without --gpu: without one there is no planner to choose a
  // precision or a recompute set, so its defaults are the plain ones (analyze's are auto).
  flags->plan.Text("precision") = "fp32";
  flags->plan.Text("recompute") = "none";
  AddPlanFlags(*command, flags->plan);
  command->add_option("--plan", flags->plan_file,
                      "a plan as `memplan analyze --json` prints it (instead of the plan flags)");
  command->add_option("--device", flags->device, "cpu (the reference backend) | cuda");
  command->add_option("--steps", flags->steps, "optimizer steps to run (default 3)");
  command->add_option("--tolerance", flags->tolerance,
                      "how far measured memory may exceed the prediction: 0.01 or 1% (default)");
  command->add_option("--max-cpu-memory", flags->max_cpu_memory,
                      "refuse plans predicted above this on the cpu device (default 8G)");
  command->add_option("--seed", flags->seed, "seed of weights, data and dropout (default 0)");
  command->add_option("--learning-rate", flags->learning_rate,
                      "optimizer learning rate (default: the optimizer's, 1e-3)");
  return Verb{command, [flags] { return RunVerify(*flags); }};
}

}  // namespace memplan::cli
