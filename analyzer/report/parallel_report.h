#pragma once
// What the reports say about a data-parallel plan (--gpus): the JSON keys plan.parallel,
// plan.gpus, plan.nodes, model_state_bytes and the "parallel" object, and the text lines. Kept
// apart from analysis_report.cc, which calls these in one place each (docs/multi_gpu.md).

#include <cstdint>
#include <string>

#include <nlohmann/json.hpp>

#include "analyzer/precision/model_state_bytes.h"

namespace memplan {

struct AnalysisReport;

// {"parameters", "master_weights", "gradients", "optimizer_state"} in bytes.
nlohmann::ordered_json ModelStateBytesJson(const ModelStateBytes& states);

// Whether the report's plan is a per-rank program (--gpus given).
bool IsDataParallelReport(const AnalysisReport& report);

// Adds plan.parallel, plan.gpus, plan.nodes to `plan_json`. REQUIRES: IsDataParallelReport.
void AddDataParallelPlanKeys(const AnalysisReport& report, nlohmann::ordered_json& plan_json);

// Adds model_state_bytes (per rank) and the "parallel" object. REQUIRES: IsDataParallelReport.
void AddDataParallelJson(const AnalysisReport& report, nlohmann::ordered_json& json);

// The text block: strategy and links, model states per rank, communication, why.
std::string DataParallelText(const AnalysisReport& report);

// --tp: every GPU the plan runs on (data-parallel replicas x tensor-parallel ranks).
int64_t PlannedGpus(const AnalysisReport& report);
// Adds plan.gpus and plan.tensor_parallel (analyzer/parallel/tensor_parallel.h) to `plan_json`
// when the plan splits the model; nothing otherwise.
void AddTensorParallelPlanKeys(const AnalysisReport& report, nlohmann::ordered_json& plan_json);
// The "Tensor" line, empty without --tp.
std::string TensorParallelText(const AnalysisReport& report);

}  // namespace memplan
