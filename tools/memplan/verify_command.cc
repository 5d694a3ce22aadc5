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
#include "analyzer/recompute/module_units.h"
#include "analyzer/text/memory_size.h"
#include "analyzer/text/tolerance.h"
#include "analyzer/vocabulary/optimizer_impl.h"
#include "graph/bind_symbols.h"
#include "graph/checked_math.h"
#include "runtime/backend_factory.h"
#include "runtime/verification.h"
#include "tools/memplan/analysis_session.h"
#include "tools/memplan/cli_common.h"
#include "tools/memplan/commands.h"
#include "tools/memplan/plan_flags.h"
#include "tools/memplan/verify_output.h"

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

Expected<std::string> ReadFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return MakeError("cannot open plan '" + path + "'");
  return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

// plan.<key>: a list of node names, each a node of the model.
Expected<std::vector<NodeId>> NodesNamed(const Graph& graph, const nlohmann::json& plan,
                                         const char* key, const std::string& where) {
  Expected<std::vector<std::string>> names = OptionalPlanStringList(plan, key, "plan.");
  if (!names.ok()) return MakeError(where + names.error().message);
  std::vector<NodeId> nodes;
  for (const std::string& name : *names) {
    auto id = graph.FindNode(name);
    if (!id)
      return MakeError(where + "'plan." + key + "' names node '" + name +
                       "', which the model does not have");
    nodes.push_back(*id);
  }
  return nodes;
}

// Micro-batches verify runs one by one. Peak memory is the same for every accumulation count from
// 2 up, so a plan beyond this is verified as well with a smaller --global-batch; past it a
// mistyped plan would run for hours (issue 14: 2^62 accumulation steps never ended).
constexpr int64_t kMaxVerifiedMicroBatches = 4096;

// The runtime's ranks (runtime/rank_group.h) are data-parallel: each runs whole kernels, so a
// program split by --tp (analyzer/parallel/tensor_parallel.h) has no kernel that computes a part.
constexpr const char* kTensorParallelNotExecuted =
    "the runtime does not execute tensor-parallel plans (--tp is planned only: its ranks run "
    "whole kernels); verify the same plan without --tp";

// A plan and, for a --fused-loss plan, the model as it was before the head and loss were fused
// (VerifyPlan::unfused_graph points into `unfused`).
struct LoadedPlan {
  VerifyPlan plan;
  std::unique_ptr<Graph> unfused;
};

// --fused-loss on `graph` (after its attention rewrite, as analyze applies it) for verify: the
// graph before the rewrite is imported again (a Graph is not copyable) and rewritten by
// `attention` as `graph` was, and the plan's loss becomes the program's (a sum over the fused
// scalar) while the unfused graph keeps `loss`.
Status FuseLossForVerify(Graph& graph, const PlanRequest& request, LossKind loss,
                         const Bindings& dims, const std::function<Status(Graph&)>& attention,
                         LoadedPlan& loaded) {
  MEMPLAN_TRY(Graph unfused, LoadPlannedModel(request));
  MEMPLAN_RETURN_IF_ERROR(attention(unfused));
  MEMPLAN_TRY(FusedLossPlan fused,
              ApplyFusedLoss(graph, /*requested=*/true, loss, dims, request.analysis.model));
  loaded.unfused = std::make_unique<Graph>(std::move(unfused));
  loaded.plan.unfused_graph = loaded.unfused.get();
  loaded.plan.unfused_loss = loss;
  loaded.plan.program.loss = fused.ProgramLoss(loss);
  return OkStatus();
}

// A plan as `memplan analyze --json` prints it (docs/json_schema.md); every field it reads is
// typed, and a field of the wrong type is an error naming it, never a default.
Expected<LoadedPlan> PlanFromJson(Graph& graph, const std::string& path,
                                  const PlanRequest& request) {
  MEMPLAN_TRY(std::string text, ReadFile(path));
  // The one JSON parser of the readers (analyzer/baseline/json_file.h): a syntax error or an
  // out-of-range number is one line naming the file (and the field).
  Expected<nlohmann::json> parsed = ParseJsonText(text, "plan '" + path + "'");
  if (!parsed.ok()) return parsed.error();
  nlohmann::json doc = std::move(*parsed);
  if (!doc.is_object())
    return MakeError("plan '" + path + "' is not JSON (expected `memplan analyze --json` output)");
  const std::string where = "plan '" + path + "': ";
  auto in_plan = [&](auto value) -> decltype(value) {
    if (!value.ok()) return MakeError(where + value.error().message);
    return value;
  };
  MEMPLAN_TRY(const nlohmann::json* plan_object, in_plan(PlanObjectOf(doc)));
  const nlohmann::json& p = *plan_object;
  auto text_of = [&](const char* key, const char* fallback) -> Expected<std::string> {
    MEMPLAN_TRY(std::optional<std::string> value, in_plan(OptionalPlanString(p, key, "plan.")));
    return value.value_or(fallback);
  };
  // The attention the plan was made with (its node names are the rewritten graph's); a plan
  // written before --attention existed planned the graph as exported.
  AttentionMode attention = AttentionMode::kEager;
  if (p.contains("attention") && p["attention"].is_object()) {
    MEMPLAN_TRY(std::optional<std::string> requested,
                in_plan(OptionalPlanString(p["attention"], "requested", "plan.attention.")));
    MEMPLAN_TRY(attention, in_plan(ParseAttentionMode(requested.value_or("eager"))));
  }
  MEMPLAN_TRY(std::string plan_precision, text_of("precision", "fp32"));
  auto apply_attention = [&](Graph& g) -> Status {
    MEMPLAN_RETURN_IF_ERROR(
        ApplyAttentionMode(g, attention, request.analysis.model, plan_precision == "fp32"));
    return OkStatus();
  };
  MEMPLAN_RETURN_IF_ERROR(apply_attention(graph));
  // A plan that keeps state in host memory (plan.offload) is planned only: the runtime keeps
  // every buffer in one memory, so its measurement would not be of that plan.
  if (p.contains("offload") && p["offload"].is_object()) {
    MEMPLAN_TRY(std::optional<std::string> offload,
                in_plan(OptionalPlanString(p["offload"], "mode", "plan.offload.")));
    if (offload && *offload != "none")
      return MakeError(where + "the runtime does not execute --offload " + *offload +
                       " (host memory and its copies are planned only)");
  }
  // A tensor-parallel plan (plan.tensor_parallel) is planned only: the runtime's ranks are
  // data-parallel, with whole kernels.
  if (p.contains("tensor_parallel") && !p["tensor_parallel"].is_null())
    return MakeError(where + kTensorParallelNotExecuted);
  // Symbols: the plan's bindings, then --dim on top; the batch symbol is the micro-batch.
  std::vector<DimBinding> dims = request.analysis.dims;
  if (doc.contains("bindings") && !doc["bindings"].is_null()) {
    if (!doc["bindings"].is_object())
      return MakeError(where + "'bindings' is not an object of symbol: size");
    for (const auto& item : doc["bindings"].items()) {
      const std::string& name = item.key();
      const nlohmann::json& value = item.value();
      if (!IsInt64(value) || value.get<int64_t>() < 1)
        return MakeError(where + "'bindings." + name + "' is not a positive integer");
      const bool given = std::any_of(dims.begin(), dims.end(),
                                     [&](const DimBinding& d) { return d.name == name; });
      auto symbol = graph.symbols().Find(name);
      if (given || !symbol) continue;
      if (graph.batch_symbol() && *graph.batch_symbol() == *symbol) continue;
      dims.push_back(DimBinding{name, value.get<int64_t>()});
    }
  }
  LoadedPlan loaded;
  VerifyPlan& plan = loaded.plan;
  MEMPLAN_TRY(plan.bindings, BindSymbols(graph, std::nullopt, dims));
  MEMPLAN_TRY(std::string loss, text_of("loss", "auto"));
  MEMPLAN_TRY(LossKind requested_loss, in_plan(ParseLossKind(loss)));
  // A fused-loss plan (plan.fused_loss): the head and loss fused as analyze fused them (the
  // rewrite keeps the symbols, so the bindings hold), before the plan's node names are read.
  MEMPLAN_TRY(std::optional<bool> fused_loss, in_plan(OptionalPlanBool(p, "fused_loss", "plan.")));
  ProgramOptions& o = plan.program;
  o.loss = requested_loss;
  if (fused_loss.value_or(false)) {
    Status fused =
        FuseLossForVerify(graph, request, requested_loss, plan.bindings, apply_attention, loaded);
    if (!fused.ok()) return MakeError(where + fused.error().message);
  }
  MEMPLAN_TRY(plan.micro_batch, in_plan(RequiredPlanPositiveInt(p, "micro_batch", "plan.")));
  MEMPLAN_TRY(o.accumulation_steps,
              in_plan(RequiredPlanPositiveInt(p, "accumulation_steps", "plan.")));
  MEMPLAN_TRY(o.precision, in_plan(ParsePrecision(plan_precision)));
  // plan.amp_mode is absent from plans written before regimes were modelled: master weights.
  MEMPLAN_TRY(std::string amp_mode, text_of("amp_mode", "master-weights"));
  MEMPLAN_TRY(o.amp_mode, in_plan(ParseAmpMode(amp_mode)));
  MEMPLAN_TRY(std::string optimizer, text_of("optimizer", "adam"));
  MEMPLAN_TRY(o.optimizer, in_plan(ParseOptimizerKind(optimizer)));
  // plan.optimizer_impl is absent from plans written before the step's intermediates were
  // modelled (and for optimizers without torch.optim implementations): fused, no intermediate.
  MEMPLAN_TRY(std::string optimizer_impl, text_of("optimizer_impl", "fused"));
  MEMPLAN_TRY(o.optimizer_impl, in_plan(ParseOptimizerImpl(optimizer_impl)));
  MEMPLAN_TRY(std::string zero_grad, text_of("zero_grad", "set_to_none"));
  MEMPLAN_TRY(o.zero_grad, in_plan(ParseZeroGradMode(zero_grad)));
  MEMPLAN_TRY(std::optional<bool> clip, in_plan(OptionalPlanBool(p, "clip_gradients", "plan.")));
  o.clip_gradients = clip.value_or(false);
  MEMPLAN_TRY(std::string scaling, text_of("loss_scaling", "dynamic"));
  if (scaling == "none")
    o.loss_scaling = LossScaling{LossScalingMode::kNone};
  else if (scaling == "static")
    o.loss_scaling = LossScaling{LossScalingMode::kStatic};
  else if (scaling != "dynamic")
    return MakeError(where + "'plan.loss_scaling' must be none, static or dynamic, got '" +
                     scaling + "'");
  MEMPLAN_TRY(o.recompute, NodesNamed(graph, p, "recompute", where));
  // A multi-GPU plan (plan.parallel, plan.gpus) runs as that many simulated ranks.
  MEMPLAN_TRY(o.data_parallel, in_plan(OptionalPlanDataParallel(p)));
  // A module plan (plan.recompute_unit "module"): the same nodes, re-run module by module as
  // torch.utils.checkpoint does (analyzer/derivation/recompute_set.h).
  MEMPLAN_TRY(std::string unit, text_of("recompute_unit", "node"));
  if (unit == "module") {
    MEMPLAN_TRY(std::vector<std::string> paths,
                in_plan(OptionalPlanStringList(p, "recompute_modules", "plan.")));
    const std::vector<CheckpointableModule> modules = FindCheckpointableModules(graph);
    for (const std::string& module_path : paths) {
      auto it = std::find_if(modules.begin(), modules.end(),
                             [&](const CheckpointableModule& m) { return m.path == module_path; });
      if (it == modules.end())
        return MakeError(where + "'plan.recompute_modules' names '" + module_path +
                         "', which is no checkpointable module of this model");
      o.recompute_modules.push_back(it->nodes);
    }
  } else if (unit != "node") {
    return MakeError(where + "'plan.recompute_unit' must be node or module, got '" + unit + "'");
  }
  // The placement the planner chose, node by node (ignored in fp32).
  if (o.precision != Precision::kFp32) {
    const DType working = o.precision == Precision::kFp16 ? DType::kFloat16 : DType::kBFloat16;
    o.node_dtype.assign(graph.num_nodes(), std::nullopt);
    MEMPLAN_TRY(auto fp16, NodesNamed(graph, p, "fp16_ops", where));
    MEMPLAN_TRY(auto fp32, NodesNamed(graph, p, "fp32_ops", where));
    for (NodeId n : fp16) o.node_dtype[n.index()] = working;
    for (NodeId n : fp32) o.node_dtype[n.index()] = DType::kFloat32;
  }
  return loaded;
}

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

int RunVerify(const VerifyFlags& flags) {
  Expected<PlanRequest> request = ResolvePlanFlags(flags.plan, /*require_gpu=*/false);
  if (!request.ok()) return ReportError(request.error().message);
  const std::vector<std::string_view> devices = BackendNames();
  if (std::find(devices.begin(), devices.end(), flags.device) == devices.end()) {
    std::string names;
    for (std::string_view d : devices) names += (names.empty() ? "" : " or ") + std::string(d);
    return ReportError("--device must be " + names + ", got '" + flags.device + "'");
  }
  if (const auto& base = request->planner.program.base_dtype;
      base && (*base == BaseDType::kInt8 || *base == BaseDType::kNf4))
    return ReportError("verify: the runtime does not execute --base-dtype " +
                       std::string(BaseDTypeName(*base)) +
                       " (quantised weights are planned only); verify with --base-dtype bf16");
  if (const OffloadMode offload = request->planner.program.offload.mode;
      offload != OffloadMode::kNone)
    return ReportError("verify: the runtime does not execute --offload " +
                       std::string(OffloadModeName(offload)) +
                       " (host memory and its copies are planned only); verify without --offload");
  if (request->tensor_parallel > 1)
    return ReportError(std::string("verify: ") + kTensorParallelNotExecuted);
  const BackendFactory backends = BackendFor(flags.device);
  if (flags.device != "cpu") {
    // Fail before any work when there is no device.
    auto probe = backends();
    if (!probe.ok()) return ReportError(probe.error().message);
  }
  VerifyOptions options;
  options.steps = flags.steps;
  Expected<uint64_t> seed = ParseSeed(flags.seed);
  if (!seed.ok()) return ReportError(seed.error().message);
  options.seed = *seed;
  if (flags.steps < 1) return ReportError("--steps must be at least 1");
  Expected<Tolerance> tolerance = ParseTolerance(flags.tolerance);
  Expected<double> fraction =
      tolerance.ok() ? RelativeFraction(*tolerance) : Expected<double>(tolerance.error());
  if (!fraction.ok()) return ReportError("--tolerance: " + fraction.error().message);
  options.tolerance = *fraction;
  auto limit = ParseMemorySize(flags.max_cpu_memory);
  if (!limit.ok()) return ReportError("--max-cpu-memory: " + limit.error().message);
  options.max_memory_bytes = flags.device == "cpu" ? *limit : std::numeric_limits<int64_t>::max();
  if (!flags.learning_rate.empty()) {
    Expected<double> rate = ParseLearningRate(flags.learning_rate);
    if (!rate.ok()) return ReportError(rate.error().message);
    options.executor.optimizer.learning_rate = *rate;
  }

  Progress progress(request->analysis.format);
  VerifiedPlanInfo info;
  info.model = request->analysis.model;
  Graph graph;
  LoadedPlan loaded_plan;
  VerifyPlan& plan = loaded_plan.plan;
  std::unique_ptr<AnalysisSession> session;
  auto requested_attention = [&](Graph& g) -> Status {
    MEMPLAN_RETURN_IF_ERROR(ApplyRequestedAttention(g, *request));
    return OkStatus();
  };
  if (!flags.plan_file.empty()) {
    auto loaded = LoadPlannedModel(*request);
    if (!loaded.ok()) return ReportError(loaded.error().message);
    graph = std::move(*loaded);
    auto p = PlanFromJson(graph, flags.plan_file, *request);
    if (!p.ok()) return ReportError(p.error().message);
    loaded_plan = std::move(*p);
    info.plan_source = "--plan " + flags.plan_file;
  } else if (request->planner.micro_batch && flags.plan.Text("gpu").empty()) {
    auto loaded = LoadPlannedModel(*request);
    if (!loaded.ok()) return ReportError(loaded.error().message);
    graph = std::move(*loaded);
    if (Status attention = requested_attention(graph); !attention.ok())
      return ReportError(attention.error().message);
    // --fused-loss: the rewrite sizes the logits tile with the --dim values (as analyze does).
    Expected<Bindings> dims = BindSymbols(graph, std::nullopt, request->analysis.dims);
    if (!dims.ok()) return ReportError(dims.error().message);
    if (request->fused_loss) {
      Status fused = FuseLossForVerify(graph, *request, request->planner.program.loss, *dims,
                                       requested_attention, loaded_plan);
      if (!fused.ok()) return ReportError(fused.error().message);
    }
    auto p = PlanFromFlags(graph, *request, flags.plan);
    if (!p.ok()) return ReportError(p.error().message);
    if (request->fused_loss) {
      p->program.loss = plan.program.loss;
      p->unfused_graph = plan.unfused_graph;
      p->unfused_loss = plan.unfused_loss;
    }
    plan = std::move(*p);
    info.plan_source = "flags";
  } else if (!flags.plan.Text("gpu").empty()) {
    auto s = RunAnalysisSession(*request, progress);
    if (!s.ok()) return ReportError(s.error().message);
    session = std::move(*s);
    if (!session->plan.feasible)
      return ReportError("the planner found no plan that fits " + flags.plan.Text("gpu") +
                         "; nothing to verify");
    if (session->fused_loss.fused()) {
      // The session fused its graph; the reference is the model imported again, unfused.
      auto unfused = LoadPlannedModel(*request);
      if (!unfused.ok()) return ReportError(unfused.error().message);
      if (Status attention = requested_attention(*unfused); !attention.ok())
        return ReportError(attention.error().message);
      loaded_plan.unfused = std::make_unique<Graph>(std::move(*unfused));
    }
    plan.program = session->planner_used.program;
    plan.program.accumulation_steps = session->plan.chosen.accumulation_steps;
    plan.micro_batch = session->plan.chosen.micro_batch;
    plan.bindings = session->plan.bindings;
    plan.unfused_graph = loaded_plan.unfused.get();
    plan.unfused_loss = request->planner.program.loss;
    info.plan_source = "the planner (--gpu " + flags.plan.Text("gpu") + ")";
  } else {
    return ReportError("verify needs a plan: --plan plan.json, --batch N, or --gpu to plan one");
  }
  if (plan.program.accumulation_steps > kMaxVerifiedMicroBatches)
    return ReportError("the plan accumulates " + std::to_string(plan.program.accumulation_steps) +
                       " micro-batches per step; verify runs each one and takes at most " +
                       std::to_string(kMaxVerifiedMicroBatches) +
                       " (peak memory is the same from 2 up: verify a smaller global batch)");
  // The fused loss has a CPU reference kernel only (runtime/cpu/kernels/fused_loss.cc).
  if (plan.unfused_graph != nullptr && flags.device != "cpu")
    return ReportError("--fused-loss: the " + flags.device +
                       " backend has no kernel for Liger's fused linear cross entropy; verify "
                       "the plan with --device cpu");
  const Graph& g = session ? session->graph : graph;
  info.program = plan.program;
  info.fused_loss = plan.unfused_graph != nullptr;
  for (NodeId n : plan.program.recompute) info.recompute.push_back(g.node(n).name);

  progress.Report("running the plan on " + flags.device + "...");
  auto report = VerifyPlanOnBackend(g, plan, backends, options);
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
