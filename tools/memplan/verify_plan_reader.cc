#include "tools/memplan/verify_plan_reader.h"

#include <algorithm>
#include <fstream>
#include <iterator>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "analyzer/baseline/json_file.h"
#include "analyzer/config_export/plan_json_fields.h"
#include "analyzer/derivation/attention_plan.h"
#include "analyzer/derivation/fused_loss_plan.h"
#include "analyzer/recompute/module_units.h"
#include "graph/bind_symbols.h"

namespace memplan::cli {
namespace {

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

// A loss over several outputs (plan.loss_terms): each term's output and loss, in order, into
// `o`; nothing for a plan without the field.
Status ReadLossTerms(const nlohmann::json& plan, const std::string& where, ProgramOptions& o) {
  if (!plan.contains("loss_terms")) return OkStatus();
  const nlohmann::json& terms = plan["loss_terms"];
  if (!terms.is_array())
    return MakeError(where + "'plan.loss_terms' must be a list of {output, loss} objects");
  for (const nlohmann::json& term : terms) {
    if (!term.is_object() || !term.contains("output") || !term["output"].is_string() ||
        !term.contains("loss") || !term["loss"].is_string())
      return MakeError(where +
                       R"(each of 'plan.loss_terms' must be {"output": name, "loss": kind})");
    Expected<LossKind> kind = ParseLossKind(term["loss"].get<std::string>());
    if (!kind.ok()) return MakeError(where + kind.error().message);
    o.loss_outputs.push_back(term["output"].get<std::string>());
    o.output_losses.push_back(*kind);
  }
  return OkStatus();
}

}  // namespace

Status LoadUnfusedReference(const PlanRequest& request, LossKind loss,
                            const std::function<Status(Graph&)>& attention, LoadedPlan& loaded) {
  MEMPLAN_TRY(Graph unfused, LoadPlannedModel(request));
  MEMPLAN_RETURN_IF_ERROR(attention(unfused));
  loaded.unfused = std::make_unique<Graph>(std::move(unfused));
  loaded.plan.unfused_graph = loaded.unfused.get();
  loaded.plan.unfused_loss = loss;
  return OkStatus();
}

Status FuseLossForVerify(Graph& graph, const PlanRequest& request, LossKind loss,
                         const Bindings& dims, const std::function<Status(Graph&)>& attention,
                         LoadedPlan& loaded) {
  MEMPLAN_RETURN_IF_ERROR(LoadUnfusedReference(request, loss, attention, loaded));
  MEMPLAN_TRY(FusedLossPlan fused,
              ApplyFusedLoss(graph, /*requested=*/true, loss, dims, request.analysis.model));
  loaded.plan.program.loss = fused.ProgramLoss(loss);
  return OkStatus();
}

// A plan as `memplan analyze --json` prints it (docs/json_schema.md); every field it reads is
// typed, and a field of the wrong type is an error naming it, never a default.
Expected<LoadedPlan> PlanFromJsonText(Graph& graph, const std::string& text,
                                      const std::string& path, const PlanRequest& request) {
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
  MEMPLAN_TRY(std::vector<PlanBinding> bound, in_plan(PlanBindingsOf(doc)));
  for (const PlanBinding& binding : bound) {
    const bool given = std::any_of(dims.begin(), dims.end(),
                                   [&](const DimBinding& d) { return d.name == binding.symbol; });
    auto symbol = graph.symbols().Find(binding.symbol);
    if (given || !symbol) continue;
    if (graph.batch_symbol() && *graph.batch_symbol() == *symbol) continue;
    dims.push_back(DimBinding{binding.symbol, binding.size});
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
  MEMPLAN_RETURN_IF_ERROR(ReadLossTerms(p, where, o));
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
  // The plan's scale (static: the fixed one; dynamic: the start) is the one verify runs with;
  // without one, the scaler's default start. One no float32 scaler holds (0, -0, beyond 3.4e38)
  // is refused as export refuses it.
  MEMPLAN_TRY(const std::optional<double> scale, in_plan(OptionalPlanLossScale(p)));
  MEMPLAN_TRY(std::string scaling, text_of("loss_scaling", "dynamic"));
  const double start = scale.value_or(kDefaultInitialLossScale);
  if (scaling == "none")
    o.loss_scaling = LossScaling{LossScalingMode::kNone};
  else if (scaling == "static")
    o.loss_scaling = LossScaling{LossScalingMode::kStatic, start};
  else if (scaling != "dynamic")
    return MakeError(where + "'plan.loss_scaling' must be none, static or dynamic, got '" +
                     scaling + "'");
  else if (scale && p.contains("loss_scaling"))  // else the precision's default, as written
    o.loss_scaling = LossScaling{LossScalingMode::kDynamic, start};
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

Expected<LoadedPlan> PlanFromJson(Graph& graph, const std::string& path,
                                  const PlanRequest& request) {
  MEMPLAN_TRY(std::string text, ReadFile(path));
  return PlanFromJsonText(graph, text, path, request);
}

}  // namespace memplan::cli
