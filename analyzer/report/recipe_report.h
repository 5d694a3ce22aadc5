#pragma once
// The recipe facts of a plan (issue 40) in the text and JSON reports: the dtype the loss computed
// in and whether it was chunked (analyzer/precision/loss_precision.h), the optimizer stepped in
// backward (--optimizer-in-backward), and which CUDA context figure the budget used
// (--cuda-context, analyzer/cost/gpu_specs.h).

#include <string>

#include <nlohmann/json.hpp>
#include "analyzer/report/analysis_report.h"

namespace memplan {

// plan.loss_dtype, plan.loss_chunks, plan.optimizer_in_backward, plan.compile and, for a paged
// optimizer, plan.paged_optimizer_state_bytes (docs/json_schema.md).
void AddRecipePlanKeys(const AnalysisReport& report, nlohmann::ordered_json& plan);

// bitsandbytes' paged optimizers (analyzer/program/paged_optimizer_state.h): the bytes of the
// paged states (state1/state2 of parameters of >= 1e5 elements, in CUDA unified memory) at the
// chosen micro-batch, 0 for other optimizers. They are outside the plan's device peak; the
// report says how much of them stays resident in the room the budget leaves.
int64_t PagedOptimizerStateBytes(const AnalysisReport& report);

// "Loss     cross_entropy in bf16 (the logits' dtype: pure bf16, no upcast)" and, with
// --optimizer-in-backward, an "Optimizer" line, with --compile a "Compile" line; empty lines are
// not written.
std::string RecipeText(const AnalysisReport& report);

// "lazy module loading (CUDA >= 11.7)", "eager module loading (...)" or "--cuda-context".
std::string CudaContextFigureText(const std::string& figure);

}  // namespace memplan
