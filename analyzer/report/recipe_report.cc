#include "analyzer/report/recipe_report.h"

#include <sstream>

#include "analyzer/planning/planner.h"
#include "analyzer/program/paged_optimizer_state.h"
#include "analyzer/text/memory_size.h"
#include "analyzer/vocabulary/loss_kind.h"

namespace memplan {
namespace {

std::string LossDTypeName(DType dtype) {
  switch (dtype) {
    case DType::kFloat32:
      return "fp32";
    case DType::kBFloat16:
      return "bf16";
    case DType::kFloat16:
      return "fp16";
    default:
      return std::string(DTypeName(dtype));
  }
}

}  // namespace

int64_t PagedOptimizerStateBytes(const AnalysisReport& report) {
  const TrainingProgram& program = report.plan->program;
  const std::vector<int64_t>& bytes = report.plan->simulation.buffer_bytes;
  int64_t paged = 0;
  for (const ParameterBuffers& pb : program.parameters) {
    for (size_t i = 0; i < pb.optimizer_states.size(); ++i) {
      const size_t at = pb.optimizer_states[i].index();
      if (IsPagedOptimizerState(program, pb, i) && at < bytes.size()) paged += bytes[at];
    }
  }
  return paged;
}

PagedStateResidency PagedResidency(const AnalysisReport& report) {
  return PagedStateResidencyOf(PagedOptimizerStateBytes(report), report.plan->chosen.peak_bytes,
                               report.plan->budget_bytes);
}

void AddRecipePlanKeys(const AnalysisReport& report, nlohmann::ordered_json& plan) {
  const PlanReport& facts = report.plan_report;
  if (facts.loss_dtype != DType::kUndefined) plan["loss_dtype"] = LossDTypeName(facts.loss_dtype);
  plan["loss_chunks"] = facts.loss_chunks;
  plan["optimizer_in_backward"] = facts.optimizer_in_backward;
  plan["compile"] = facts.compile;
  plan["recompute_reentrant"] = facts.recompute_reentrant;
  if (facts.optimizer == OptimizerKind::kPagedAdamW8bit) {
    const PagedStateResidency paged = PagedResidency(report);
    plan["paged_optimizer_state_bytes"] = paged.paged_bytes;
    plan["paged_optimizer_state"] = {
        {"resident_bytes", paged.resident_bytes},
        {"evicted_bytes", paged.evicted_bytes},
        {"host_traffic_bytes_per_step", paged.host_traffic_bytes_per_step}};
  }
}

std::string RecipeText(const AnalysisReport& report) {
  const PlanReport& facts = report.plan_report;
  std::ostringstream s;
  const ProgramOptions& program = report.options->program;
  if (facts.loss_dtype != DType::kUndefined && !facts.fused_loss) {
    s << "Loss     " << LossKindName(facts.loss) << " in " << LossDTypeName(facts.loss_dtype);
    if (facts.loss_chunks > 0)
      s << ", " << facts.loss_chunks
        << " chunks of tokens each upcast on its own (torchtune's CEWithChunkedOutputLoss)";
    else if (program.loss_dtype != LossDType::kAuto)
      s << " (--loss-dtype)";
    s << "\n";
  }
  if (facts.optimizer_in_backward)
    s << "Optimizer stepped in backward per parameter, each gradient freed after its step "
         "(torchtune's optimizer_in_bwd)\n";
  if (facts.compile)
    s << "Compile  torch.compile (Inductor): saved set of AOTAutograd's min-cut partitioner "
         "(pointwise chains re-run in backward, "
      << report.plan->program.recomputed.size() << " nodes re-run)\n";
  if (facts.recompute_reentrant)
    s << "Reentrant torch.utils.checkpoint(use_reentrant=True): each module re-run whole in "
         "backward, its recomputed outputs held through its inner backward\n";
  if (facts.optimizer == OptimizerKind::kPagedAdamW8bit) {
    const PagedStateResidency paged = PagedResidency(report);
    s << "Paged    " << FormatBytes(paged.paged_bytes)
      << " of optimizer state in CUDA unified memory (parameters of >= 1e5 elements), outside "
         "the caching allocator and the peak above: "
      << FormatBytes(paged.resident_bytes) << " resident in the room the budget leaves, "
      << FormatBytes(paged.evicted_bytes) << " evicted to the host ("
      << FormatBytes(paged.host_traffic_bytes_per_step) << " over the host link per step)\n";
  }
  return s.str();
}

std::string CudaContextFigureText(const std::string& figure) {
  if (figure == "lazy") return "lazy module loading, CUDA >= 11.7";
  if (figure == "eager") return "eager module loading";
  return figure;
}

}  // namespace memplan
