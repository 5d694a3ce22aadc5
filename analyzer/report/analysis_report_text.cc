#include "analyzer/report/analysis_report.h"

#include <algorithm>
#include <cstdio>
#include <map>
#include <sstream>

#include "analyzer/cost/generic_gpu_class.h"
#include "analyzer/precision/model_state_bytes.h"
#include "analyzer/precision/precision_policy.h"
#include "analyzer/recompute/checkpoint_modules.h"
#include "analyzer/report/lora_plan_report.h"
#include "analyzer/report/offload_report.h"
#include "analyzer/report/parallel_report.h"
#include "analyzer/report/peak_step_report.h"
#include "analyzer/report/plan_placement_report.h"
#include "analyzer/report/plan_report.h"
#include "analyzer/report/recipe_report.h"
#include "analyzer/text/memory_size.h"
#include "analyzer/text/number_format.h"
#include "analyzer/vocabulary/optimizer_impl.h"

namespace memplan {
namespace {

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

std::string InfeasibleText(const TrainingPlan& plan) {
  const InfeasibleReport& r = *plan.infeasible;
  std::ostringstream s;
  s << "Does not fit even at micro-batch 1: needs " << FormatBytes(r.required_bytes)
    << " of GPU memory (" << FormatBytes(plan.chosen.peak_bytes) << " for training + context"
    << " + reserve); the largest part is " << MemoryCategoryWords(r.dominant) << ", "
    << FormatBytes(r.dominant_bytes) << ". ";
  if (r.smallest_fitting_gpu.empty()) {
    s << "No GPU in memplan's table is large enough: shard the model (ZeRO/FSDP) or offload.";
  } else {
    s << "The smallest known GPU that fits: " << r.smallest_fitting_gpu << ".";
  }
  return s.str();
}

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
  s << "         " << PrecisionName(facts.precision) << ", " << OptimizerLabelOf(facts) << ", loss "
    << ReportedLossText(facts) << ", recompute " << RecomputeSummary(facts) << "\n";
  if (facts.fusions == FusionSet::kLiger)
    s << "         Liger Kernel's RMSNorm, SwiGLU and GeGLU (--fusions liger; the HF Trainer "
         "export sets "
         "use_liger_kernel)\n";
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
  if (plan.placement) s << PlanPlacementText(plan);
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
  s << "| precision | " << PrecisionName(report.plan_report.precision) << " |\n";
  s << "| optimizer | " << OptimizerLabelOf(report.plan_report) << " |\n";
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
