#include "analyzer/report/recipe_report.h"

#include <sstream>

#include "analyzer/planning/planner.h"
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

void AddRecipePlanKeys(const PlanReport& facts, nlohmann::ordered_json& plan) {
  if (facts.loss_dtype != DType::kUndefined) plan["loss_dtype"] = LossDTypeName(facts.loss_dtype);
  plan["loss_chunks"] = facts.loss_chunks;
  plan["optimizer_in_backward"] = facts.optimizer_in_backward;
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
  return s.str();
}

std::string CudaContextFigureText(const std::string& figure) {
  if (figure == "lazy") return "lazy module loading, CUDA >= 11.7";
  if (figure == "eager") return "eager module loading";
  return figure;
}

}  // namespace memplan
