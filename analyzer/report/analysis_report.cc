#include "analyzer/report/analysis_report.h"

#include <algorithm>
#include <cstdio>
#include <map>
#include <sstream>

#include "analyzer/cost/generic_gpu_class.h"
#include "analyzer/precision/model_state_bytes.h"
#include "analyzer/precision/precision_policy.h"
#include "analyzer/program/category_bytes_json.h"
#include "analyzer/program/optimizer_state.h"
#include "analyzer/recompute/checkpoint_modules.h"
#include "analyzer/report/lora_plan_report.h"
#include "analyzer/report/offload_report.h"
#include "analyzer/report/parallel_report.h"
#include "analyzer/report/peak_step_report.h"
#include "analyzer/report/placement_report.h"
#include "analyzer/report/plan_report.h"
#include "analyzer/report/recipe_report.h"
#include "analyzer/text/json_fields.h"
#include "analyzer/text/memory_size.h"
#include "analyzer/text/number_format.h"
#include "analyzer/vocabulary/optimizer_impl.h"
#include "graph/trainable_parameters.h"

namespace memplan {
namespace {

// The plan fits only because the caching allocator releases fully free cached segments when a
// cudaMalloc fails (PlanTraining's ReservedUnderCapacity): the unconstrained reserved peak is
// over the budget, the peak under the budget is not.
bool FitsByReleasingCache(const TrainingPlan& plan, const PlannerOptions& options) {
  // The chosen peak is the replay on the device the plan was judged on (the budget, or the budget
  // less the headroom); it is below the unconstrained reserved peak only where that replay
  // released cached segments.
  return plan.feasible && options.allocator == AllocatorKind::kCaching &&
         plan.simulation.peak_reserved_bytes > plan.chosen.peak_bytes;
}

// The dtype of the optimizer's per-parameter state for a large tensor ("float32"; "uint8" for
// bitsandbytes' block-quantised 8-bit state; "none" for plain SGD), from the one table of
// optimizer states (analyzer/program/optimizer_state.h).
std::string OptimizerStateDTypeText(OptimizerKind optimizer) {
  constexpr int64_t kLargeTensor = int64_t{1} << 20;  // above bitsandbytes' min_8bit_size
  const std::vector<OptimizerStateSpec> states =
      OptimizerStates(optimizer, Shape{{Dim(kLargeTensor)}, true});
  return states.empty() ? "none" : std::string(DTypeName(states.front().dtype));
}

// A loss over several outputs: each term, in the order they are summed (the first is `loss`).
nlohmann::ordered_json LossTermsJson(const PlanReport& facts) {
  nlohmann::ordered_json terms = nlohmann::ordered_json::array();
  for (size_t i = 0; i < facts.loss_outputs.size(); ++i)
    terms.push_back({{"output", facts.loss_outputs[i]},
                     {"loss", std::string(LossKindName(facts.output_losses[i]))}});
  return terms;
}

// The loss the plan trains with (a fused loss is cross entropy inside the fused node); over
// several outputs (--loss-output a,b), the sum it trains: "cross_entropy(logits) + mse(boxes)".
// The chunks of --loss-chunks are one loss (the Loss line counts them; JSON loss_terms names
// them).
std::string ReportedLossText(const PlanReport& facts) {
  if (facts.loss_outputs.size() < 2 || facts.loss_chunks > 0)
    return std::string(LossKindName(facts.loss));
  std::string text;
  for (size_t i = 0; i < facts.loss_outputs.size(); ++i) {
    if (!text.empty()) text += " + ";
    text += std::string(LossKindName(facts.output_losses[i])) + "(" + facts.loss_outputs[i] + ")";
  }
  return text;
}

// `tensor_parallel`: GPUs per replica (--tp); the data-parallel ranks are then replicas.
std::string PlanLine(const TrainingPlan& plan, int64_t tensor_parallel) {
  const PlanCandidate& c = plan.chosen;
  std::ostringstream s;
  s << "micro-batch " << c.micro_batch;
  const int64_t ranks = plan.program.data_parallel_ranks;
  if (ranks > 1) {
    // Data parallel: m and k are per rank.
    s << " x " << c.accumulation_steps << " accumulation steps x " << ranks;
    if (tensor_parallel > 1) s << " replicas of " << tensor_parallel;
    s << " GPUs = global batch " << c.global_batch;
  } else if (c.accumulation_steps > 1) {
    s << " x " << c.accumulation_steps << " accumulation steps = global batch " << c.global_batch;
  } else {
    s << ", no accumulation";
  }
  if (plan.micro_batch_fixed)
    s << " (fixed by --micro-batch)";
  else if (plan.knee)
    s << " (throughput knee; the largest "
      << (plan.largest_fitting_micro_batch > plan.largest_within_headroom ? "under the headroom"
                                                                          : "that fits")
      << ": m=" << plan.largest_within_headroom << ")";
  else if (!plan.global_batch_requested && plan.feasible &&
           plan.largest_within_headroom < plan.largest_fitting_micro_batch)
    s << " (largest under the headroom)";
  else if (!plan.global_batch_requested && plan.feasible)
    s << " (largest that fits)";
  if (plan.global_batch_requested && !plan.global_batch_exact)
    s << " (requested " << plan.requested_global_batch << " is not reachable exactly)";
  return s.str();
}

nlohmann::ordered_json CandidateJson(const PlanCandidate& c) {
  nlohmann::ordered_json j;
  MEMPLAN_JSON_FIELDS(j, c, micro_batch, accumulation_steps, global_batch);
  j["precision"] = std::string(PrecisionName(c.precision));
  j["recompute"] = RecomputeLabelName(c.recompute);
  MEMPLAN_JSON_FIELDS(j, c, peak_bytes, exact_peak_bytes, fits);
  j["estimated_step_seconds"] = c.step_seconds;
  j["samples_per_second"] = c.samples_per_second;
  return j;
}

// Device memory of loss scaling: the buffers the scaler's setup and the unscale/overflow-check
// step allocate (loss_scale and growth tracker for dynamic; found_inf, inv_scale), sized under
// the plan's bindings. Zero without loss scaling.
int64_t LossScalerBytes(const TrainingPlan& plan) {
  int64_t total = 0;
  const std::vector<int64_t>& sizes = plan.simulation.buffer_bytes;
  for (const Step& step : plan.program.steps) {
    if (step.kind != StepKind::kInitLossScaler && step.kind != StepKind::kUnscaleAndCheckOverflow)
      continue;
    for (const MemoryEvent& e : step.begin)
      if (e.action == MemoryEvent::Action::kAlloc && e.buffer.index() < sizes.size())
        total += sizes[e.buffer.index()];
  }
  return total;
}

// Mixed-precision casts of the chosen plan: how many cast buffers the program makes per
// micro-batch, their bytes, and the bytes of those held for backward (saved by a reader).
struct CastSummary {
  int64_t count = 0;
  int64_t bytes = 0;
  int64_t held_bytes = 0;
};
CastSummary SummarizeCasts(const TrainingPlan& plan) {
  CastSummary summary;
  const std::vector<int64_t>& sizes = plan.simulation.buffer_bytes;
  for (const Buffer& b : plan.program.buffers) {
    if (b.role != BufferRole::kCast || b.id.index() >= sizes.size()) continue;
    ++summary.count;
    summary.bytes += sizes[b.id.index()];
    if (b.held_for_backward) summary.held_bytes += sizes[b.id.index()];
  }
  return summary;
}

// Placed nodes per reason, in PlacementReason order (not-placed excluded).
constexpr PlacementReason kShownReasons[] = {
    PlacementReason::kFp16Safe, PlacementReason::kFp32Required, PlacementReason::kFollowsInputs,
    PlacementReason::kOverride};
std::map<PlacementReason, int64_t> CountByReason(const PrecisionPlacement& placement) {
  std::map<PlacementReason, int64_t> counts;
  for (PlacementReason r : kShownReasons) counts[r] = 0;
  for (const NodePlacement& p : placement.nodes)
    if (p.reason != PlacementReason::kNotPlaced) ++counts[p.reason];
  return counts;
}

// Each override entry with the number of nodes it placed, in first-match order.
std::vector<std::pair<std::string, int64_t>> OverrideUses(const PrecisionPlacement& placement) {
  std::vector<std::pair<std::string, int64_t>> uses;
  for (const NodePlacement& p : placement.nodes) {
    if (p.reason != PlacementReason::kOverride) continue;
    std::string entry =
        std::string(p.dtype == DType::kFloat32 ? "--fp32-ops " : "--fp16-ops ") + p.override_entry;
    auto it =
        std::find_if(uses.begin(), uses.end(), [&](const auto& use) { return use.first == entry; });
    if (it == uses.end()) {
      uses.emplace_back(entry, 1);
    } else {
      ++it->second;
    }
  }
  return uses;
}

// The plan's "placement" object (docs/json_schema.md): counts per reason, the casts, and one
// entry per placed node.
nlohmann::ordered_json PlacementJson(const Graph& graph, const TrainingPlan& plan) {
  const PrecisionPlacement& placement = *plan.placement;
  nlohmann::ordered_json j;
  j["working_dtype"] = std::string(DTypeName(WorkingDType(placement.precision)));
  nlohmann::ordered_json counts;
  for (const auto& [reason, count] : CountByReason(placement))
    counts[std::string(PlacementReasonName(reason))] = count;
  j["counts"] = counts;
  CastSummary casts = SummarizeCasts(plan);
  j["cast_buffers"] = casts.count;
  j["cast_bytes"] = casts.bytes;
  j["cast_bytes_held_for_backward"] = casts.held_bytes;
  j["nodes"] = PlacementToJson(graph, placement)["nodes"];
  return j;
}

}  // namespace

void FillPlanReport(AnalysisReport& report) {
  report.plan_report =
      PlanReportOf(PlanSources{report.model_path, report.model_name, report.graph, report.options,
                               report.plan, report.attention, report.fused_loss});
}

namespace {

// The memplan/1 "model" object: where the plan's facts say the model is, and its size.
nlohmann::ordered_json ModelJson(const AnalysisReport& report) {
  const PlanReport& facts = report.plan_report;
  return {{"path", facts.model_path},
          {"name", facts.model_name},
          {"parameter_count", facts.parameter_count},
          {"node_count", static_cast<int64_t>(report.graph->num_nodes())}};
}

// The "gpu" object: the device planned for and how its context bytes were figured.
nlohmann::ordered_json GpuJson(const GpuSpec& gpu) {
  nlohmann::ordered_json j = {
      {"name", gpu.name},
      {"memory_bytes", gpu.memory_bytes},
      {"context_bytes", gpu.context_bytes},
      // issue 10: context_bytes split by generation (analyzer/cost/gpu_specs.h).
      {"generation", std::string(GpuGenerationName(gpu.generation))},
      {"cuda_context_bytes", gpu.cuda_context_bytes},
      {"cublas_workspace_bytes", gpu.cublas_workspace_bytes},
      {"cublas_workspaces", kCublasHandlesPerTraining},
      // issue 40: which figure cuda_context_bytes is (--cuda-context).
      {"cuda_context_figure", gpu.cuda_context_figure}};
  if (gpu.is_generic) {
    // A bare size (--gpu 24G[:class]): the class and the GPU whose throughput the times assume.
    j["generic_class"] = std::string(GpuGenerationName(gpu.generation));
    j["throughput_of"] = GenericClassReference(gpu.generation).name;
  }
  return j;
}

// The top-level memory keys: the budget, the peak and where it falls, the breakdown at the peak
// and the activations saved for backward.
void AddMemoryJson(const AnalysisReport& report, nlohmann::ordered_json& j) {
  const TrainingPlan& plan = *report.plan;
  const PlannerOptions& options = *report.options;
  const MemoryResult& memory = report.plan_report.memory;
  j["reserve_bytes"] = options.reserve_bytes;
  j["budget_bytes"] = plan.budget_bytes;
  j["headroom_bytes"] = plan.headroom_bytes;
  j["peak_bytes"] = memory.peak_bytes;
  j["exact_peak_bytes"] = plan.chosen.exact_peak_bytes;
  j["fragmentation_bytes"] = memory.peak_bytes - plan.chosen.exact_peak_bytes;
  j["allocator"] = std::string(AllocatorKindName(options.allocator));
  j["fits"] = plan.feasible;
  // issue 40 item 8 / issue 41: the caching model's reserved peak without a device limit (what
  // max_memory_reserved shows on a larger card), and whether the plan fits only because PyTorch
  // releases fully free cached segments before it fails (peak_bytes is then the replay's peak
  // under the budget).
  j["reserved_without_limit_bytes"] = plan.simulation.peak_reserved_bytes;
  j["fits_by_releasing_cache"] = FitsByReleasingCache(plan, options);
  j["inference_export"] = report.inference_export;
  const SimulationResult& sim = plan.simulation;
  j["peak"] = {{"step", sim.peak_at.step},
               {"phase", std::string(CoarsePhaseNameAt(plan.program, sim.peak_at.step))},
               {"node", sim.peak_at.step >= 0 ? plan.program.step(sim.peak_at.step).name : ""},
               {"allocations", PeakStepAllocationsJson(PeakStepAllocations(plan))}};
  j["breakdown"] = CategoryBytesJson(memory.breakdown);
  j["saved_activation_bytes"] = memory.saved_activation_bytes;
  j["model_state_bytes"] = ModelStateBytesJson(ModelStateBytesOf(plan.program, sim.buffer_bytes));
  // Sorted by node name (std::map).
  nlohmann::ordered_json saved_json = nlohmann::ordered_json::object();
  for (const auto& [name, bytes] : memory.saved_bytes_by_node) saved_json[name] = bytes;
  j["saved_activations_by_node"] = saved_json;
}

// plan.micro_batch .. plan.throughput_knee: the batch the plan runs.
void AddBatchPlanKeys(const TrainingPlan& plan, nlohmann::ordered_json& p) {
  p["micro_batch"] = plan.chosen.micro_batch;
  // The largest micro-batch under the budget itself, beside the one recommended under
  // budget - headroom (the same without headroom, or a fixed micro-batch).
  p["max_micro_batch"] = plan.largest_fitting_micro_batch;
  p["accumulation_steps"] = plan.chosen.accumulation_steps;
  p["global_batch"] = plan.chosen.global_batch;
  p["global_batch_exact"] = plan.global_batch_exact;
  if (plan.knee) {
    // --knee: micro_batch is the throughput knee, below the largest under the headroom.
    p["throughput_knee"] = {{"largest_under_headroom", plan.largest_within_headroom},
                            {"best_micro_batch", plan.knee_best_micro_batch},
                            {"best_samples_per_second", plan.knee_best_samples_per_second}};
  }
}

// plan.precision .. plan.loss_scaler_bytes: the regime, the optimizer step and the loss.
void AddStepPlanKeys(const AnalysisReport& report, nlohmann::ordered_json& p) {
  const PlanReport& facts = report.plan_report;
  p["precision"] = std::string(PrecisionName(facts.precision));
  if (facts.amp_mode) p["amp_mode"] = std::string(AmpModeName(*facts.amp_mode));
  p["optimizer"] = std::string(OptimizerKindName(facts.optimizer));
  // torch.optim's implementation, which decides the optimizer step's intermediates; absent for
  // optimizers that run their own kernels.
  if (facts.optimizer_impl)
    p["optimizer_impl"] = std::string(OptimizerImplName(*facts.optimizer_impl));
  // issue 41 item 5: the PYTORCH_CUDA_ALLOC_CONF the plan modelled (--alloc-conf, --allocator
  // expandable), only when it differs from PyTorch's defaults; the exports set it.
  if (!facts.alloc_conf.empty()) p["alloc_conf"] = facts.alloc_conf;
  p["loss"] = std::string(LossKindName(facts.loss));
  if (!facts.loss_outputs.empty()) p["loss_terms"] = LossTermsJson(facts);
  p["zero_grad"] = std::string(ZeroGradModeName(facts.zero_grad));
  p["clip_gradients"] = facts.clip_gradients.value_or(false);
  p["loss_scaling"] =
      std::string(LossScalingModeName(facts.loss_scaling.value_or(LossScalingMode::kNone)));
  if (facts.loss_scale) p["loss_scale"] = *facts.loss_scale;
  p["loss_scaler_bytes"] = LossScalerBytes(*report.plan);
}

// plan.recompute .. plan.placement: what backward re-runs and the per-node dtypes.
void AddNodePlanKeys(const AnalysisReport& report, nlohmann::ordered_json& p) {
  const PlanReport& facts = report.plan_report;
  p["recompute"] = facts.recompute_nodes;
  if (!facts.recompute_op_types.empty()) p["recompute_op_types"] = facts.recompute_op_types;
  p["checkpoints"] = report.checkpoint_nodes;
  p["recompute_unit"] = std::string(RecomputeUnitName(facts.recompute_unit));
  p["recompute_modules"] = facts.recompute_modules;
  p["checkpointable_modules"] = facts.checkpointable_modules;
  p["fp16_ops"] = facts.fp16_nodes;
  p["fp32_ops"] = facts.fp32_nodes;
  if (report.plan->placement) p["placement"] = PlacementJson(*report.graph, *report.plan);
}

// The "plan" object (docs/json_schema.md): the plan's facts, then what the features add.
nlohmann::ordered_json PlanJson(const AnalysisReport& report) {
  const PlanReport& facts = report.plan_report;
  nlohmann::ordered_json p;
  AddBatchPlanKeys(*report.plan, p);
  AddStepPlanKeys(report, p);
  AddNodePlanKeys(report, p);
  if (IsDataParallelReport(report)) AddDataParallelPlanKeys(report, p);
  AddTensorParallelPlanKeys(report, p);
  if (report.attention != nullptr) p["attention"] = AttentionPlanToJson(*report.attention);
  if (report.fused_loss != nullptr) {
    const nlohmann::ordered_json fused =
        FusedLossPlanToJson(*report.fused_loss, report.plan->bindings);
    for (const auto& [key, value] : fused.items()) p[key] = value;
  }
  AddRecipePlanKeys(report, p);
  // Fine-tuning (docs/finetuning.md): the elements the optimizer updates; equal to
  // model.parameter_count unless --train/--freeze/--lora froze some.
  p["trainable_parameter_count"] = facts.trainable_parameter_count;
  if (facts.base_dtype) p["base_dtype"] = std::string(BaseDTypeName(*facts.base_dtype));
  // --lora: the adapters a training script must build (rank, alpha, modules), read back from
  // the graph the plan simulated.
  if (facts.lora) p["lora"] = LoraPlanReportJson(*facts.lora);
  p["optimizer_state_dtype"] = OptimizerStateDTypeText(facts.optimizer);
  // --offload: what lives in host memory and what the copies cost (offload_report.h).
  if (IsOffloadReport(report)) p["offload"] = OffloadJson(report);
  return p;
}

// The keys after the plan: bindings, time, the candidates, advice, what would fit, warnings.
void AddOutcomeJson(const AnalysisReport& report, nlohmann::ordered_json& j) {
  const TrainingPlan& plan = *report.plan;
  nlohmann::ordered_json bindings = nlohmann::ordered_json::object();
  for (const DimBinding& b : report.plan_report.bindings) bindings[b.name] = b.value;
  j["bindings"] = bindings;
  j["estimated_step_seconds"] = plan.time.step_seconds;
  j["samples_per_second"] = plan.chosen.samples_per_second;
  if (!report.choice_explanation.empty()) j["explanation"] = report.choice_explanation;
  nlohmann::ordered_json candidates = nlohmann::ordered_json::array();
  for (const PlanCandidate& c : plan.candidates) candidates.push_back(CandidateJson(c));
  j["candidates"] = candidates;
  nlohmann::ordered_json advice = nlohmann::ordered_json::array();
  for (const AdviceItem& a : report.advice)
    advice.push_back({{"id", a.id}, {"message", a.message}});
  j["advice"] = advice;
  if (plan.infeasible) {
    j["infeasible"] = {
        {"required_bytes", plan.infeasible->required_bytes},
        {"smallest_fitting_gpu", plan.infeasible->smallest_fitting_gpu},
        {"dominant_category", std::string(MemoryCategoryName(plan.infeasible->dominant))},
        {"dominant_bytes", plan.infeasible->dominant_bytes}};
  }
  if (report.alternatives != nullptr) {
    j["alternatives"] = AlternativesJson(*report.alternatives);
    j["alternatives_not_planned"] = AlternativesNotPlannedJson(*report.alternatives);
  }
  j["warnings"] = report.warnings;
}

}  // namespace

nlohmann::ordered_json AnalysisToJson(const AnalysisReport& report) {
  nlohmann::ordered_json j;
  j["schema"] = "memplan/1";
  j["command"] = "analyze";
  j["model"] = ModelJson(report);
  j["gpu"] = GpuJson(report.options->gpu);
  AddMemoryJson(report, j);
  j["plan"] = PlanJson(report);
  if (IsDataParallelReport(report)) AddDataParallelJson(report, j);
  AddOutcomeJson(report, j);
  return j;
}

namespace {

std::string InfeasibleText(const TrainingPlan& plan) {
  const InfeasibleReport& r = *plan.infeasible;
  std::ostringstream s;
  s << "Does not fit even at micro-batch 1: needs " << FormatBytes(r.required_bytes)
    << " of GPU memory (" << FormatBytes(plan.chosen.peak_bytes) << " for training + context"
    << " + reserve); " << MemoryCategoryName(r.dominant) << " dominate with "
    << FormatBytes(r.dominant_bytes) << ". ";
  if (r.smallest_fitting_gpu.empty()) {
    s << "No GPU in memplan's table is large enough: shard the model (ZeRO/FSDP) or offload.";
  } else {
    s << "The smallest known GPU that fits: " << r.smallest_fitting_gpu << ".";
  }
  return s.str();
}

}  // namespace

std::string InferenceExportText(const AnalysisReport& report) {
  return "WARNING: " + report.model_name +
         " looks like an inference (eval-mode) export, so this plan is for the model as "
         "exported and underestimates training memory (the micro-batch below may not fit in "
         "training). Re-export in training mode; details under Warnings.";
}

namespace {

// "none", "42 nodes", or "7 of 12 modules (42 nodes)" for a module plan.
std::string RecomputeSummary(const PlanReport& facts) {
  if (facts.recompute_nodes.empty()) return "none";
  std::string nodes = std::to_string(facts.recompute_nodes.size()) + " nodes";
  if (facts.recompute_modules.empty()) return nodes;
  return std::to_string(facts.recompute_modules.size()) + " of " +
         std::to_string(facts.checkpointable_modules) + " modules (" + nodes + ")";
}

// The first `shown` of `names` joined by ", ", then ", ... (all: --json, <json_field>)" where
// some are left out: a text line names a few, the JSON all of them.
std::string FirstNames(const std::vector<std::string>& names, size_t shown,
                       std::string_view json_field) {
  std::string out;
  for (size_t i = 0; i < std::min(shown, names.size()); ++i) out += (i ? ", " : "") + names[i];
  if (names.size() > shown) out += ", ... (all: --json, " + std::string(json_field) + ")";
  return out;
}

// The placement in a few lines of text: counts per reason, the overrides, the casts, loss
// scaling. The per-node list is in the JSON only (plan.placement.nodes).
std::string PlacementText(const TrainingPlan& plan) {
  const PrecisionPlacement& placement = *plan.placement;
  std::map<PlacementReason, int64_t> counts = CountByReason(placement);
  std::ostringstream s;
  s << "Mixed    " << PrecisionName(placement.precision)
    << " placement: " << counts[PlacementReason::kFp16Safe] << " fp16-safe, "
    << counts[PlacementReason::kFp32Required] << " fp32-required, "
    << counts[PlacementReason::kFollowsInputs] << " follow their inputs, "
    << counts[PlacementReason::kOverride] << " overridden\n";
  std::vector<std::pair<std::string, int64_t>> uses = OverrideUses(placement);
  if (!uses.empty()) {
    s << "         overrides:";
    for (size_t i = 0; i < uses.size(); ++i)
      s << (i == 0 ? " " : ", ") << uses[i].first << " (" << uses[i].second
        << (uses[i].second == 1 ? " node)" : " nodes)");
    s << "\n";
  }
  CastSummary casts = SummarizeCasts(plan);
  s << "         casts: " << casts.count << " buffers, " << FormatBytes(casts.bytes)
    << " per micro-batch (" << FormatBytes(casts.held_bytes) << " held for backward)\n";
  const LossScaling& scaling = plan.program.loss_scaling;
  s << "         loss scaling " << LossScalingModeName(scaling.mode);
  if (scaling.mode != LossScalingMode::kNone)
    s << " (scale " << FormatFixed(scaling.scale, 0) << ", " << FormatBytes(LossScalerBytes(plan))
      << " on the device)";
  s << "; per-node dtypes and reasons: --json, plan.placement.nodes\n";
  return s.str();
}

}  // namespace

namespace {

// The title and the budget: "memplan analyze <model> on <gpu>", what the budget leaves.
std::string HeaderText(const AnalysisReport& report) {
  const PlannerOptions& options = *report.options;
  std::ostringstream s;
  s << "memplan analyze " << report.model_name << " on " << options.gpu.name << " ("
    << FormatBytes(options.gpu.memory_bytes) << ")\n";
  s << "budget " << FormatBytes(report.plan->budget_bytes) << " = GPU - "
    << FormatBytes(options.gpu.context_bytes) << " CUDA context ("
    << CudaContextFigureText(options.gpu.cuda_context_figure) << ")";
  if (options.reserve_bytes > 0) s << " - " << FormatBytes(options.reserve_bytes) << " reserve";
  s << "\n";
  if (options.gpu.is_generic) s << "gpu    " << GenericGpuText(options.gpu) << "\n";
  return s.str();
}

// "Plan" .. "LoRA": the batch, the regime, recompute, placement, parallelism, fine-tuning.
std::string PlanText(const AnalysisReport& report) {
  const TrainingPlan& plan = *report.plan;
  const PlanReport& facts = report.plan_report;
  std::ostringstream s;
  s << "Plan     " << PlanLine(plan, facts.tensor_parallel) << "\n";
  s << "         " << PrecisionName(facts.precision) << ", "
    << OptimizerLabel(plan.program.optimizer_kind, plan.program.optimizer_impl) << ", loss "
    << ReportedLossText(facts) << ", recompute " << RecomputeSummary(facts) << "\n";
  if (!facts.alloc_conf.empty())
    s << "         PYTORCH_CUDA_ALLOC_CONF=" << facts.alloc_conf
      << " (modelled; the exports set it)\n";
  if (!facts.recompute_modules.empty()) {
    // The modules the exports wrap in torch.utils.checkpoint, exactly what was simulated.
    s << "Checkpoint " << facts.recompute_modules.size()
      << " modules: " << FirstNames(facts.recompute_modules, /*shown=*/8, "plan.recompute_modules")
      << "\n";
  }
  if (!report.checkpoint_nodes.empty()) {
    // The segment boundaries kept in memory, by ONNX node name (PyTorch exports carry module
    // paths): the first few here, all of them in --json (plan.checkpoints).
    s << "Keep     " << report.checkpoint_nodes.size()
      << " checkpoints: " << FirstNames(report.checkpoint_nodes, /*shown=*/4, "plan.checkpoints")
      << "\n";
  }
  if (plan.placement) s << PlacementText(plan);
  if (IsDataParallelReport(report)) s << DataParallelText(report);
  s << TensorParallelText(report);
  if (facts.trainable_parameter_count != facts.parameter_count) {
    s << "Train    " << facts.trainable_parameter_count << " of " << facts.parameter_count
      << " parameters (the rest frozen: no gradient, no optimizer state";
    if (facts.base_dtype) s << ", stored as " << BaseDTypeName(*facts.base_dtype);
    s << ")\n";
  }
  if (const std::optional<LoraPlanReport>& lora = facts.lora) {
    s << "LoRA     rank " << lora->rank << " (alpha " << lora->alpha << ") on "
      << lora->target_modules.size()
      << (lora->target_modules.size() == 1 ? " module: " : " modules: ")
      << FirstNames(lora->peft_target_modules, /*shown=*/6, "plan.lora.peft_target_modules")
      << "\n";
  }
  return s.str();
}

// After "Peak": how close to the edge, the headroom recommendation against the absolute maximum.
std::string HeadroomText(const TrainingPlan& plan) {
  std::ostringstream s;
  s << "         headroom " << FormatBytes(plan.headroom_bytes) << " ("
    << FormatPercent(plan.headroom_bytes, plan.budget_bytes) << " of the budget) kept free; ";
  // About the largest under the headroom (the plan's m unless it is the throughput knee).
  const int64_t top = plan.largest_within_headroom;
  if (plan.largest_fitting_micro_batch > top) {
    s << "the largest micro-batch that fits is m=" << plan.largest_fitting_micro_batch << " at "
      << FormatPercent(plan.largest_fitting_peak_bytes, plan.budget_bytes)
      << " of the budget (--headroom 0)";
  } else if (plan.budget_bytes - plan.chosen.peak_bytes < plan.headroom_bytes) {
    s << "m=" << plan.chosen.micro_batch << " is the smallest plan and still eats into it";
  } else {
    s << "m=" << top << " is also the largest that fits";
  }
  s << "\n";
  return s.str();
}

// "Peak" and its detail: what the allocator model reserves, live bytes, where the peak falls.
std::string PeakText(const AnalysisReport& report) {
  const TrainingPlan& plan = *report.plan;
  const PlannerOptions& options = *report.options;
  const SimulationResult& sim = plan.simulation;
  std::ostringstream s;
  s << "Peak     " << FormatBytes(plan.chosen.peak_bytes) << " of "
    << FormatBytes(plan.budget_bytes) << " ("
    << FormatPercent(plan.chosen.peak_bytes, plan.budget_bytes) << ") - "
    << (plan.feasible ? "fits" : "DOES NOT FIT") << "\n";
  if (plan.headroom_bytes > 0 && plan.feasible && !plan.micro_batch_fixed) s << HeadroomText(plan);
  // The headline is the allocator model's peak; charts (--svg, report) draw live bytes.
  s << "         ";
  if (options.allocator == AllocatorKind::kExact) {
    s << "live bytes (exact allocator)";
  } else {
    s << "reserved by the " << AllocatorKindName(options.allocator) << " allocator (what must fit)";
  }
  s << "; live tensors " << FormatBytes(plan.chosen.exact_peak_bytes)
    << " (what the timeline chart draws), fragmentation "
    << FormatBytes(plan.chosen.peak_bytes - plan.chosen.exact_peak_bytes) << "\n";
  if (FitsByReleasingCache(plan, options)) {
    s << "         without a device limit the caching allocator would reserve "
      << FormatBytes(plan.simulation.peak_reserved_bytes)
      << "; on this GPU a failed cudaMalloc first releases every fully free cached segment "
         "(release_cached_blocks) and retries, and the replay under the budget refuses nothing\n";
  }
  if (sim.peak_at.step >= 0) {
    s << "         peak in " << CoarsePhaseNameAt(plan.program, sim.peak_at.step) << ", step "
      << sim.peak_step_name << "\n";
    // What that step creates, by name: equal workspace and transients figures are two tensors.
    const std::string made = PeakStepAllocationsText(PeakStepAllocations(plan), /*shown=*/3);
    if (!made.empty()) s << "         " << made << "\n";
  }
  return s.str();
}

// "Saved" .. "Why": offload, saved activations, model state, attention, the loss, the recipe,
// the step time and why this plan.
std::string StateText(const AnalysisReport& report) {
  const TrainingPlan& plan = *report.plan;
  const SimulationResult& sim = plan.simulation;
  std::ostringstream s;
  if (IsOffloadReport(report)) s << OffloadText(report);
  s << "Saved    " << FormatBytes(sim.saved_activation_bytes)
    << " of activations held for backward per micro-batch\n";
  const ModelStateBytes state = ModelStateBytesOf(plan.program, sim.buffer_bytes);
  s << "State    ";
  if (plan.program.precision != Precision::kFp32) s << AmpModeName(plan.program.amp_mode) << ": ";
  s << "parameters " << FormatBytes(state.parameters);
  if (state.master_weights > 0) s << ", master weights " << FormatBytes(state.master_weights);
  s << ", gradients " << FormatBytes(state.gradients) << ", optimizer state "
    << FormatBytes(state.optimizer_state) << "\n";
  // How attention was planned, beside the saved bytes it changes most (docs/attention.md).
  if (report.attention != nullptr) {
    const std::vector<std::string> lines = AttentionPlanText(*report.attention);
    for (size_t i = 0; i < lines.size(); ++i)
      s << (i == 0 ? "Attn     " : "         ") << lines[i] << "\n";
  }
  if (report.fused_loss != nullptr && report.fused_loss->fused())
    s << "Loss     " << FusedLossPlanText(*report.fused_loss, plan.bindings) << "\n";
  s << RecipeText(report);
  s << "Time     " << FormatFixed(plan.time.step_seconds, 4) << " s per optimizer step, "
    << FormatFixed(plan.chosen.samples_per_second, 1) << " samples/s (roofline estimate)\n";
  if (!report.choice_explanation.empty()) s << "Why      " << report.choice_explanation << "\n";
  return s.str();
}

// "Breakdown at peak": each memory category's bytes and share.
std::string BreakdownText(const SimulationResult& sim) {
  std::ostringstream s;
  s << "\nBreakdown at peak\n";
  for (MemoryCategory c : kAllMemoryCategories) {
    char line[96];
    std::snprintf(line, sizeof(line), "  %-16s %12s  %4s\n",
                  std::string(MemoryCategoryName(c)).c_str(),
                  FormatBytes(sim.peak_breakdown[c]).c_str(),
                  FormatPercent(sim.peak_breakdown[c], sim.peak_bytes).c_str());
    s << line;
  }
  return s.str();
}

// "Candidates": every configuration planned, the chosen one starred.
std::string CandidatesText(const TrainingPlan& plan) {
  std::ostringstream s;
  s << "\nCandidates\n";
  char line[128];
  std::snprintf(line, sizeof(line), "  %6s %5s %7s %-5s %-8s %11s %4s %9s %10s\n", "m", "k", "G",
                "prec", "recomp", "peak", "fits", "step s", "samples/s");
  s << line;
  for (const PlanCandidate& c : plan.candidates) {
    std::snprintf(
        line, sizeof(line), "%s %6lld %5lld %7lld %-5s %-8s %11s %4s %9s %10s\n",
        (c.micro_batch == plan.chosen.micro_batch && c.precision == plan.chosen.precision &&
         c.recompute == plan.chosen.recompute)
            ? " *"
            : "  ",
        static_cast<long long>(c.micro_batch), static_cast<long long>(c.accumulation_steps),
        static_cast<long long>(c.global_batch), std::string(PrecisionName(c.precision)).c_str(),
        std::string(RecomputeLabelName(c.recompute)).c_str(), FormatBytes(c.peak_bytes).c_str(),
        c.fits ? "yes" : "no", FormatFixed(c.step_seconds, 4).c_str(),
        FormatFixed(c.samples_per_second, 1).c_str());
    s << line;
  }
  return s.str();
}

}  // namespace

std::string FormatAnalysisText(const AnalysisReport& report) {
  const TrainingPlan& plan = *report.plan;
  std::ostringstream s;
  s << HeaderText(report) << "\n";
  if (report.inference_export) s << InferenceExportText(report) << "\n\n";
  if (plan.infeasible && !plan.feasible) s << InfeasibleText(plan) << "\n\n";
  if (report.alternatives != nullptr) s << AlternativesText(*report.alternatives) << "\n";
  s << PlanText(report) << PeakText(report) << StateText(report);
  s << BreakdownText(plan.simulation) << CandidatesText(plan);
  if (!report.advice.empty()) {
    s << "\nAdvice\n";
    for (const AdviceItem& a : report.advice) s << "  - " << a.message << "\n";
  }
  if (!report.warnings.empty()) {
    s << "\nWarnings\n";
    for (const std::string& w : report.warnings) s << "  - " << w << "\n";
  }
  return s.str();
}

std::string FormatAnalysisMarkdown(const AnalysisReport& report) {
  const TrainingPlan& plan = *report.plan;
  const PlannerOptions& options = *report.options;
  const SimulationResult& sim = plan.simulation;
  std::ostringstream s;
  s << "## memplan: " << report.model_name << " on " << options.gpu.name << "\n\n";
  if (report.inference_export) s << "**" << InferenceExportText(report) << "**\n\n";
  if (plan.infeasible && !plan.feasible) s << "**" << InfeasibleText(plan) << "**\n\n";
  if (report.alternatives != nullptr) s << AlternativesMarkdown(*report.alternatives) << "\n";
  s << "| | |\n|---|---|\n";
  if (options.gpu.is_generic) s << "| gpu | " << GenericGpuText(options.gpu) << " |\n";
  s << "| plan | " << PlanLine(plan, report.options->tensor_parallel.degree) << " |\n";
  s << "| precision | " << PrecisionName(plan.program.precision) << " |\n";
  s << "| optimizer | " << OptimizerLabel(plan.program.optimizer_kind, plan.program.optimizer_impl)
    << " |\n";
  s << "| peak | " << FormatBytes(plan.chosen.peak_bytes) << " of "
    << FormatBytes(plan.budget_bytes) << " ("
    << FormatPercent(plan.chosen.peak_bytes, plan.budget_bytes) << "), "
    << (plan.feasible ? "fits" : "**does not fit**") << " |\n";
  s << "| saved activations | " << FormatBytes(sim.saved_activation_bytes)
    << " per micro-batch |\n";
  if (IsOffloadReport(report))
    s << "| host (--offload " << OffloadModeName(plan.program.offload) << ") | "
      << FormatBytes(sim.host_peak_bytes) << " pinned, " << FormatBytes(plan.time.transfer_bytes)
      << " over the host link per step |\n";
  s << "| step time | " << FormatFixed(plan.time.step_seconds, 4) << " s ("
    << FormatFixed(plan.chosen.samples_per_second, 1) << " samples/s, roofline) |\n\n";
  s << "### Breakdown at peak\n\n| category | bytes | share |\n|---|---:|---:|\n";
  for (MemoryCategory c : kAllMemoryCategories)
    s << "| " << MemoryCategoryName(c) << " | " << FormatBytes(sim.peak_breakdown[c]) << " | "
      << FormatPercent(sim.peak_breakdown[c], sim.peak_bytes) << " |\n";
  s << "\n### Candidates\n\n| m | k | G | precision | recompute | peak | fits | step s | samples/s "
       "|\n|---:|---:|---:|---|---|---:|---|---:|---:|\n";
  for (const PlanCandidate& c : plan.candidates)
    s << "| " << c.micro_batch << " | " << c.accumulation_steps << " | " << c.global_batch << " | "
      << PrecisionName(c.precision) << " | " << RecomputeLabelName(c.recompute) << " | "
      << FormatBytes(c.peak_bytes) << " | " << (c.fits ? "yes" : "no") << " | "
      << FormatFixed(c.step_seconds, 4) << " | " << FormatFixed(c.samples_per_second, 1) << " |\n";
  if (!report.advice.empty()) {
    s << "\n### Advice\n\n";
    for (const AdviceItem& a : report.advice) s << "- " << a.message << "\n";
  }
  return s.str();
}

}  // namespace memplan
