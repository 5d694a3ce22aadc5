#pragma once
// What the reports say about an --offload plan: the JSON object plan.offload and the text lines
// beside the GPU peak (docs/json_schema.md, docs/finetuning.md). Kept apart from
// analysis_report.cc, which calls these in one place each.

#include <string>

#include <nlohmann/json.hpp>

namespace memplan {

struct AnalysisReport;

// Whether the report's plan moves anything to host memory.
bool IsOffloadReport(const AnalysisReport& report);

// plan.offload: mode, host bytes (peak, breakdown, saved activations), the host link and the
// time the copies and the CPU optimizer add. REQUIRES: IsOffloadReport.
nlohmann::ordered_json OffloadJson(const AnalysisReport& report);

// "Host     59.8 GiB pinned (...)" and a line with the link, the bytes per step and the time.
// REQUIRES: IsOffloadReport.
std::string OffloadText(const AnalysisReport& report);

}  // namespace memplan
