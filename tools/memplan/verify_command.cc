// `memplan verify model.onnx [--plan plan.json | plan flags] [--device cpu|cuda] [--steps N]
// [--tolerance 1%] [--max-cpu-memory 8G] [--json]`: runs the plan on the bundled runtime and
// compares measured memory, gradients and training with the simulator (docs/verify.md).
// Exit 0 when every check passes, 1 when one fails, 2 on bad input (one line on stderr).
#include <algorithm>
#include <cstdio>
#include <fstream>
#include <limits>
#include <memory>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "analyzer/memory_size.h"
#include "analyzer/vocabulary/tolerance.h"
#include "graph/bind_symbols.h"
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
  uint64_t seed = 0;
  double learning_rate = 0.0;  // 0 = the optimizer's default
};

Expected<std::string> ReadFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return MakeError("cannot open plan '" + path + "'");
  return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

Expected<std::vector<NodeId>> NodesNamed(const Graph& graph, const nlohmann::json& names,
                                         const std::string& key) {
  std::vector<NodeId> nodes;
  if (names.is_null()) return nodes;
  if (!names.is_array()) return MakeError("plan: '" + key + "' must be a list of node names");
  for (const auto& n : names) {
    if (!n.is_string()) return MakeError("plan: '" + key + "' must be a list of node names");
    auto id = graph.FindNode(n.get<std::string>());
    if (!id)
      return MakeError("plan: " + key + " names node '" + n.get<std::string>() +
                       "', which the model does not have");
    nodes.push_back(*id);
  }
  return nodes;
}

// A plan as `memplan analyze --json` prints it (docs/json_schema.md).
Expected<VerifyPlan> PlanFromJson(const Graph& graph, const std::string& path,
                                  const PlanRequest& request) {
  MEMPLAN_TRY(std::string text, ReadFile(path));
  nlohmann::json doc = nlohmann::json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (doc.is_discarded() || !doc.is_object())
    return MakeError("plan '" + path + "' is not JSON (expected `memplan analyze --json` output)");
  if (!doc.contains("plan") || !doc["plan"].is_object())
    return MakeError("plan '" + path + "' has no \"plan\" object");
  const nlohmann::json& p = doc["plan"];
  auto text_of = [&](const char* key, const char* fallback) {
    return p.contains(key) && p[key].is_string() ? p[key].get<std::string>()
                                                 : std::string(fallback);
  };
  auto int_of = [&](const char* key) -> Expected<int64_t> {
    if (!p.contains(key) || !p[key].is_number_integer() || p[key].get<int64_t>() < 1)
      return MakeError("plan '" + path + "': \"" + key + "\" must be a positive integer");
    return p[key].get<int64_t>();
  };
  VerifyPlan plan;
  ProgramOptions& o = plan.program;
  MEMPLAN_TRY(plan.micro_batch, int_of("micro_batch"));
  MEMPLAN_TRY(o.accumulation_steps, int_of("accumulation_steps"));
  MEMPLAN_TRY(o.precision, ParsePrecision(text_of("precision", "fp32")));
  MEMPLAN_TRY(o.optimizer, ParseOptimizerKind(text_of("optimizer", "adam")));
  MEMPLAN_TRY(o.loss, ParseLossKind(text_of("loss", "auto")));
  MEMPLAN_TRY(o.zero_grad, ParseZeroGradMode(text_of("zero_grad", "set_to_none")));
  o.clip_gradients = p.contains("clip_gradients") && p["clip_gradients"].is_boolean() &&
                     p["clip_gradients"].get<bool>();
  const std::string scaling = text_of("loss_scaling", "");
  if (scaling == "none") o.loss_scaling = LossScaling{LossScalingMode::kNone};
  if (scaling == "static") o.loss_scaling = LossScaling{LossScalingMode::kStatic};
  MEMPLAN_TRY(o.recompute, NodesNamed(graph, p.value("recompute", nlohmann::json()), "recompute"));
  // The placement the planner chose, node by node (ignored in fp32).
  if (o.precision != Precision::kFp32) {
    const DType working = o.precision == Precision::kFp16 ? DType::kFloat16 : DType::kBFloat16;
    o.node_dtype.assign(graph.num_nodes(), std::nullopt);
    MEMPLAN_TRY(auto fp16, NodesNamed(graph, p.value("fp16_ops", nlohmann::json()), "fp16_ops"));
    MEMPLAN_TRY(auto fp32, NodesNamed(graph, p.value("fp32_ops", nlohmann::json()), "fp32_ops"));
    for (NodeId n : fp16) o.node_dtype[n.index()] = working;
    for (NodeId n : fp32) o.node_dtype[n.index()] = DType::kFloat32;
  }
  // Symbols: the plan's bindings, then --dim on top; the batch symbol is the micro-batch.
  std::vector<DimBinding> dims = request.analysis.dims;
  if (doc.contains("bindings") && doc["bindings"].is_object()) {
    for (const auto& [name, value] : doc["bindings"].items()) {
      const bool given = std::any_of(dims.begin(), dims.end(),
                                     [&](const DimBinding& d) { return d.name == name; });
      auto symbol = graph.symbols().Find(name);
      if (given || !value.is_number_integer() || !symbol) continue;
      if (graph.batch_symbol() && *graph.batch_symbol() == *symbol) continue;
      dims.push_back(DimBinding{name, value.get<int64_t>()});
    }
  }
  MEMPLAN_TRY(plan.bindings, BindSymbols(graph, std::nullopt, dims));
  return plan;
}

// A plan from the flags alone: a fixed micro-batch (--batch / --micro-batch) and the options.
Expected<VerifyPlan> PlanFromFlags(const Graph& graph, const PlanRequest& request,
                                   const PlanArguments& flags) {
  VerifyPlan plan;
  plan.micro_batch = *request.planner.micro_batch;
  plan.program = request.planner.program;
  if (request.search.precision == PrecisionChoice::kAuto)
    return MakeError("--precision auto needs the planner: give --gpu, or a precision");
  const int64_t m = plan.micro_batch;
  if (request.planner.global_batch) {
    if (*request.planner.global_batch % m != 0)
      return MakeError("--global-batch " + std::to_string(*request.planner.global_batch) +
                       " is not a multiple of the micro-batch " + std::to_string(m));
    plan.program.accumulation_steps = *request.planner.global_batch / m;
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
  const BackendFactory backends = BackendFor(flags.device);
  if (flags.device != "cpu") {
    // Fail before any work when there is no device.
    auto probe = backends();
    if (!probe.ok()) return ReportError(probe.error().message);
  }
  VerifyOptions options;
  options.steps = flags.steps;
  options.seed = flags.seed;
  if (flags.steps < 1) return ReportError("--steps must be at least 1");
  Expected<Tolerance> tolerance = ParseTolerance(flags.tolerance);
  Expected<double> fraction =
      tolerance.ok() ? RelativeFraction(*tolerance) : Expected<double>(tolerance.error());
  if (!fraction.ok()) return ReportError("--tolerance: " + fraction.error().message);
  options.tolerance = *fraction;
  auto limit = ParseMemorySize(flags.max_cpu_memory);
  if (!limit.ok()) return ReportError("--max-cpu-memory: " + limit.error().message);
  options.max_memory_bytes = flags.device == "cpu" ? *limit : std::numeric_limits<int64_t>::max();
  if (flags.learning_rate > 0) options.executor.optimizer.learning_rate = flags.learning_rate;

  Progress progress(request->analysis.format);
  VerifiedPlanInfo info;
  info.model = request->analysis.model;
  Graph graph;
  VerifyPlan plan;
  std::unique_ptr<AnalysisSession> session;
  if (!flags.plan_file.empty()) {
    auto loaded = LoadModel(request->analysis);
    if (!loaded.ok()) return ReportError(loaded.error().message);
    graph = std::move(*loaded);
    auto p = PlanFromJson(graph, flags.plan_file, *request);
    if (!p.ok()) return ReportError(p.error().message);
    plan = std::move(*p);
    info.plan_source = "--plan " + flags.plan_file;
  } else if (request->planner.micro_batch && flags.plan.Text("gpu").empty()) {
    auto loaded = LoadModel(request->analysis);
    if (!loaded.ok()) return ReportError(loaded.error().message);
    graph = std::move(*loaded);
    auto p = PlanFromFlags(graph, *request, flags.plan);
    if (!p.ok()) return ReportError(p.error().message);
    plan = std::move(*p);
    info.plan_source = "flags";
  } else if (!flags.plan.Text("gpu").empty()) {
    auto s = RunAnalysisSession(*request, progress);
    if (!s.ok()) return ReportError(s.error().message);
    session = std::move(*s);
    if (!session->plan.feasible)
      return ReportError("the planner found no plan that fits " + flags.plan.Text("gpu") +
                         "; nothing to verify");
    plan.program = session->planner_used.program;
    plan.program.accumulation_steps = session->plan.chosen.accumulation_steps;
    plan.micro_batch = session->plan.chosen.micro_batch;
    plan.bindings = session->plan.bindings;
    info.plan_source = "the planner (--gpu " + flags.plan.Text("gpu") + ")";
  } else {
    return ReportError("verify needs a plan: --plan plan.json, --batch N, or --gpu to plan one");
  }
  const Graph& g = session ? session->graph : graph;
  info.program = plan.program;
  for (NodeId n : plan.program.recompute) info.recompute.push_back(g.node(n).name);

  progress.Report("running the plan on " + flags.device + "...");
  auto report = VerifyPlanOnBackend(g, plan, backends, options);
  if (!report.ok()) return ReportError(report.error().message);
  std::string out = request->analysis.format == OutputFormat::kJson
                        ? VerificationToJson(*report, info).dump(2) + "\n"
                        : FormatVerificationText(*report, info);
  std::fwrite(out.data(), 1, out.size(), stdout);
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
