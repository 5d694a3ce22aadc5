// The check report as one JSON object for scripts (schema "memplan-check/1"): the numbers the
// other formats print, unformatted.

#include <nlohmann/json.hpp>

#include "analyzer/baseline/check_format_internal.h"

namespace memplan::check_format {
namespace {

constexpr const char* kCheckJsonSchema = "memplan-check/1";

nlohmann::ordered_json ConfigurationJson(const ConfigurationCheck& check) {
  nlohmann::ordered_json c;
  c["name"] = check.name;
  c["model"] = check.model;
  c["status"] = std::string(CheckStatusName(check.status));
  const bool recorded = check.status != CheckStatus::kNew;
  const bool current = check.status != CheckStatus::kMissing;
  c["recorded_peak_bytes"] = recorded ? nlohmann::ordered_json(check.recorded.peak_bytes) : nullptr;
  c["current_peak_bytes"] = current ? nlohmann::ordered_json(check.current.peak_bytes) : nullptr;
  if (recorded && current) {
    c["change_bytes"] = check.PeakChange();
    c["allowed_bytes"] = check.allowed_bytes;
  }
  c["flags_changed"] = check.flags_changed;
  c["plan"] = PlanSentence(check);
  if (check.baseline_line > 0) c["baseline_line"] = check.baseline_line;
  nlohmann::ordered_json grown = nlohmann::ordered_json::array();
  for (const NodeGrowth& node : check.grown_nodes)
    grown.push_back({{"node", node.node},
                     {"recorded_bytes", node.recorded_bytes},
                     {"current_bytes", node.current_bytes}});
  c["grown_nodes"] = grown;
  c["grown_node_count"] = check.grown_node_count;
  return c;
}

}  // namespace

std::string FormatJson(const CheckReport& report) {
  nlohmann::ordered_json j;
  j["schema"] = kCheckJsonSchema;
  j["baseline"] = report.baseline_path;
  j["tolerance"] = report.tolerance.text;
  j["failed"] = report.Failed();
  j["exit_code"] = report.ExitCode();
  nlohmann::ordered_json counts = nlohmann::ordered_json::object();
  for (const NamedValue<CheckStatus>& status : kCheckStatusNames)
    counts[std::string(status.name)] = report.Count(status.value);
  j["counts"] = counts;
  nlohmann::ordered_json configurations = nlohmann::ordered_json::array();
  for (const ConfigurationCheck& check : report.configurations)
    configurations.push_back(ConfigurationJson(check));
  j["configurations"] = configurations;
  return j.dump(2) + "\n";
}

std::string FormatJsonError(std::string_view message, std::string_view baseline_path) {
  nlohmann::ordered_json j;
  j["schema"] = kCheckJsonSchema;
  j["baseline"] = std::string(baseline_path);
  j["error"] = std::string(message);
  j["exit_code"] = 2;
  return j.dump(2) + "\n";
}

}  // namespace memplan::check_format
