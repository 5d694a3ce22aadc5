#include "analyzer/report/analysis_report.h"

#include <string>
#include <vector>

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
#include "analyzer/report/plan_placement_report.h"
#include "analyzer/report/plan_report.h"
#include "analyzer/report/recipe_report.h"
#include "analyzer/text/json_fields.h"
#include "analyzer/vocabulary/fusion_set_names.h"
#include "analyzer/vocabulary/optimizer_impl.h"

namespace memplan {
namespace {

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
  if (report.plan->placement) p["placement"] = PlanPlacementJson(*report.graph, *report.plan);
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
  // The import fusions, when not the default: "liger" means the run patches in Liger's kernels.
  if (facts.fusions != FusionSet::kFusedOps)
    p["fusions"] = std::string(FusionSetName(facts.fusions));
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

}  // namespace memplan
