#include "analyzer/report/recipe_report.h"

#include <sstream>

#include "analyzer/planning/planner.h"
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

// bitsandbytes pages a state only for parameters of at least this many elements
// (get_state_buffer: `if not self.is_paged or p.numel() < 1e5`).
constexpr int64_t kPagedMinElements = 100000;

int64_t PagedOptimizerStateBytes(const AnalysisReport& report) {
  const TrainingProgram& program = report.plan->program;
  if (program.optimizer_kind != OptimizerKind::kPagedAdamW8bit) return 0;
  const std::vector<int64_t>& bytes = report.plan->simulation.buffer_bytes;
  int64_t paged = 0;
  for (const ParameterBuffers& pb : program.parameters) {
    const std::optional<int64_t> n = program.buffer(pb.master).shape.NumElements().constant_value();
    if (!n || *n < kPagedMinElements) continue;
    // state1 and state2 come first (analyzer/program/optimizer_state.h); the absmax stay.
    for (size_t i = 0; i < pb.optimizer_states.size() && i < 2; ++i) {
      const size_t at = pb.optimizer_states[i].index();
      if (at < bytes.size()) paged += bytes[at];
    }
  }
  return paged;
}

void AddRecipePlanKeys(const PlanReport& facts, const AnalysisReport& report,
                       nlohmann::ordered_json& plan) {
  if (facts.loss_dtype != DType::kUndefined) plan["loss_dtype"] = LossDTypeName(facts.loss_dtype);
  plan["loss_chunks"] = facts.loss_chunks;
  plan["optimizer_in_backward"] = facts.optimizer_in_backward;
  plan["compile"] = facts.compile;
  if (facts.optimizer == OptimizerKind::kPagedAdamW8bit)
    plan["paged_optimizer_state_bytes"] = PagedOptimizerStateBytes(report);
}

std::string RecipeText(const PlanReport& facts, const AnalysisReport& report) {
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
  if (facts.optimizer == OptimizerKind::kPagedAdamW8bit)
    s << "Paged    " << FormatBytes(PagedOptimizerStateBytes(report))
      << " of optimizer state in CUDA unified memory (parameters of >= 1e5 elements), counted "
         "on the device; under pressure the driver evicts it to the host\n";
  return s.str();
}

std::string CudaContextFigureText(const std::string& figure) {
  if (figure == "lazy") return "lazy module loading, CUDA >= 11.7";
  if (figure == "eager") return "eager module loading";
  return figure;
}

}  // namespace memplan
