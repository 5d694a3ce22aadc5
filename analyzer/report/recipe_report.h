#pragma once
// The recipe facts of a plan (issue 40) in the text and JSON reports: the dtype the loss computed
// in and whether it was chunked (analyzer/precision/loss_precision.h), the optimizer stepped in
// backward (--optimizer-in-backward), and which CUDA context figure the budget used
// (--cuda-context, analyzer/cost/gpu_specs.h).

#include <string>

#include <nlohmann/json.hpp>
#include "analyzer/report/plan_report.h"

namespace memplan {

// plan.loss_dtype, plan.loss_chunks, plan.optimizer_in_backward (docs/json_schema.md).
void AddRecipePlanKeys(const PlanReport& facts, nlohmann::ordered_json& plan);

// "Loss     cross_entropy in bf16 (the logits' dtype: pure bf16, no upcast)" and, with
// --optimizer-in-backward, an "Optimizer" line; empty lines are not written.
std::string RecipeText(const PlanReport& facts, const AnalysisReport& report);

// "lazy module loading (CUDA >= 11.7)", "eager module loading (...)" or "--cuda-context".
std::string CudaContextFigureText(const std::string& figure);

}  // namespace memplan
