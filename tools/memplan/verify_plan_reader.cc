#include "tools/memplan/verify_plan_reader.h"

#include <algorithm>
#include <fstream>
#include <iterator>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "analyzer/baseline/json_file.h"
#include "analyzer/config_export/saved_plan_reader.h"
#include "analyzer/derivation/attention_plan.h"
#include "analyzer/derivation/chunked_loss_plan.h"
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

// Node names a plan field lists (plan.<key>), each a node of the model.
Expected<std::vector<NodeId>> NodesNamed(const Graph& graph, const std::vector<std::string>& names,
                                         const char* key, const std::string& where) {
  std::vector<NodeId> nodes;
  for (const std::string& name : names) {
    auto id = graph.FindNode(name);
    if (!id)
      return MakeError(where + "'plan." + key + "' names node '" + name +
                       "', which the model does not have");
    nodes.push_back(*id);
  }
  return nodes;
}

// The saved bindings, then --dim on top; the batch symbol is the micro-batch's.
std::vector<DimBinding> BindingsToApply(const Graph& graph, const PlanReport& saved,
                                        std::vector<DimBinding> dims) {
  for (const DimBinding& binding : saved.bindings) {
    const bool given = std::any_of(dims.begin(), dims.end(),
                                   [&](const DimBinding& d) { return d.name == binding.name; });
    auto symbol = graph.symbols().Find(binding.name);
    if (given || !symbol) continue;
    if (graph.batch_symbol() && *graph.batch_symbol() == *symbol) continue;
    dims.push_back(binding);
  }
  return dims;
}

// The module plan's checkpointed modules (plan.recompute_modules), each a module of the model.
Status ReadRecomputeModules(const Graph& graph, const PlanReport& saved, const std::string& where,
                            ProgramOptions& o) {
  if (!saved.ModuleUnit()) return OkStatus();
  const std::vector<CheckpointableModule> modules = FindCheckpointableModules(graph);
  for (const std::string& module_path : saved.recompute_modules) {
    auto it = std::find_if(modules.begin(), modules.end(),
                           [&](const CheckpointableModule& m) { return m.path == module_path; });
    if (it == modules.end())
      return MakeError(where + "'plan.recompute_modules' names '" + module_path +
                       "', which is no checkpointable module of this model");
    o.recompute_modules.push_back(it->nodes);
  }
  return OkStatus();
}

// The placement the planner chose, node by node (ignored in fp32).
Status ReadPlacement(const Graph& graph, const PlanReport& saved, const std::string& where,
                     ProgramOptions& o) {
  if (o.precision == Precision::kFp32) return OkStatus();
  const DType working = o.precision == Precision::kFp16 ? DType::kFloat16 : DType::kBFloat16;
  o.node_dtype.assign(graph.num_nodes(), std::nullopt);
  MEMPLAN_TRY(auto fp16, NodesNamed(graph, saved.fp16_nodes, "fp16_ops", where));
  MEMPLAN_TRY(auto fp32, NodesNamed(graph, saved.fp32_nodes, "fp32_ops", where));
  for (NodeId n : fp16) o.node_dtype[n.index()] = working;
  for (NodeId n : fp32) o.node_dtype[n.index()] = DType::kFloat32;
  return OkStatus();
}

// The program options a saved plan names, as analyze derived them. Absent fields mean what they
// meant when the plan was written: amp_mode master weights (before regimes were modelled), the
// fused optimizer step (before its intermediates were), no clipping (analyze's default).
void ProgramOptionsOf(const PlanReport& saved, ProgramOptions& o) {
  o.precision = saved.precision;
  o.amp_mode = saved.amp_mode.value_or(AmpMode::kMasterWeights);
  o.optimizer = saved.optimizer;
  o.optimizer_impl = saved.optimizer_impl.value_or(OptimizerImpl::kFused);
  o.zero_grad = saved.zero_grad;
  o.clip_gradients = saved.clip_gradients.value_or(false);
  o.recompute_reentrant = saved.recompute_reentrant;
  // The plan's scale (static: the fixed one; dynamic: the start) is the one verify runs with;
  // without one, the scaler's default start; without a mode, the precision's default.
  if (saved.loss_scaling)
    o.loss_scaling =
        LossScaling{*saved.loss_scaling, saved.loss_scale.value_or(kDefaultInitialLossScale)};
  o.accumulation_steps = saved.accumulation_steps;
  o.data_parallel = saved.data_parallel;
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

// A plan as `memplan analyze --json` prints it (docs/json_schema.md), read by the one reader of
// a saved plan (ReadSavedPlan: every field typed, a field of the wrong type an error naming it)
// and applied to the model.
Expected<LoadedPlan> PlanFromJsonText(Graph& graph, const std::string& text,
                                      const std::string& path, const PlanRequest& request) {
  // The one JSON parser of the readers (analyzer/baseline/json_file.h): a syntax error or an
  // out-of-range number is one line naming the file (and the field).
  Expected<nlohmann::json> parsed = ParseJsonText(text, "plan '" + path + "'");
  if (!parsed.ok()) return parsed.error();
  if (!parsed->is_object())
    return MakeError("plan '" + path + "' is not JSON (expected `memplan analyze --json` output)");
  const std::string where = "plan '" + path + "': ";
  Expected<PlanReport> read = ReadSavedPlan(*parsed);
  if (!read.ok()) return MakeError(where + read.error().message);
  const PlanReport& saved = *read;
  // The attention the plan was made with (its node names are the rewritten graph's).
  auto apply_attention = [&](Graph& g) -> Status {
    MEMPLAN_RETURN_IF_ERROR(ApplyAttentionMode(g, saved.attention, request.analysis.model,
                                               saved.precision == Precision::kFp32));
    return OkStatus();
  };
  MEMPLAN_RETURN_IF_ERROR(apply_attention(graph));
  // A plan that keeps state in host memory (plan.offload) is planned only: the runtime keeps
  // every buffer in one memory, so its measurement would not be of that plan.
  if (saved.offload != OffloadMode::kNone)
    return MakeError(where + "the runtime does not execute --offload " +
                     std::string(OffloadModeName(saved.offload)) +
                     " (host memory and its copies are planned only)");
  // A tensor-parallel plan (plan.tensor_parallel) is planned only: the runtime's ranks are
  // data-parallel, with whole kernels.
  if (saved.tensor_parallel > 1) return MakeError(where + kTensorParallelNotExecuted);
  LoadedPlan loaded;
  VerifyPlan& plan = loaded.plan;
  MEMPLAN_TRY(plan.bindings, BindSymbols(graph, std::nullopt,
                                         BindingsToApply(graph, saved, request.analysis.dims)));
  ProgramOptions& o = plan.program;
  o.loss = saved.loss;
  o.loss_outputs = saved.loss_outputs;
  o.output_losses = saved.output_losses;
  // A fused-loss plan (plan.fused_loss): the head and loss fused as analyze fused them (the
  // rewrite keeps the symbols, so the bindings hold), before the plan's node names are read.
  if (saved.fused_loss) {
    Status fused =
        FuseLossForVerify(graph, request, saved.loss, plan.bindings, apply_attention, loaded);
    if (!fused.ok()) return MakeError(where + fused.error().message);
  }
  // A chunked-loss plan (plan.loss_chunks): the head run per chunk as analyze ran it, its loss
  // terms the chunks (the saved plan names them).
  if (saved.loss_chunks > 0) {
    Expected<ChunkedLossPlan> chunked = ApplyChunkedLoss(graph, saved.loss_chunks, saved.loss, {},
                                                         plan.bindings, request.analysis.model);
    if (!chunked.ok()) return MakeError(where + chunked.error().message);
    o.loss_chunks = saved.loss_chunks;
  }
  plan.micro_batch = saved.micro_batch;
  ProgramOptionsOf(saved, o);
  MEMPLAN_TRY(o.recompute, NodesNamed(graph, saved.recompute_nodes, "recompute", where));
  // A module plan (plan.recompute_unit "module"): the same nodes, re-run module by module as
  // torch.utils.checkpoint does (analyzer/derivation/recompute_set.h).
  MEMPLAN_RETURN_IF_ERROR(ReadRecomputeModules(graph, saved, where, o));
  MEMPLAN_RETURN_IF_ERROR(ReadPlacement(graph, saved, where, o));
  return loaded;
}

Expected<LoadedPlan> PlanFromJson(Graph& graph, const std::string& path,
                                  const PlanRequest& request) {
  MEMPLAN_TRY(std::string text, ReadFile(path));
  return PlanFromJsonText(graph, text, path, request);
}

}  // namespace memplan::cli
