#include "analyzer/baseline/check_report.h"

#include <algorithm>

namespace memplan {
namespace {

std::vector<NodeGrowth> GrownNodes(const MemoryResult& recorded, const MemoryResult& current) {
  std::vector<NodeGrowth> grown;
  for (const auto& [node, bytes] : current.saved_bytes_by_node) {
    auto it = recorded.saved_bytes_by_node.find(node);
    int64_t before = it == recorded.saved_bytes_by_node.end() ? 0 : it->second;
    if (bytes > before) grown.push_back(NodeGrowth{node, before, bytes});
  }
  std::sort(grown.begin(), grown.end(), [](const NodeGrowth& a, const NodeGrowth& b) {
    if (a.Growth() != b.Growth()) return a.Growth() > b.Growth();
    return a.node < b.node;
  });
  return grown;
}

ConfigurationCheck Compare(const BaselineEntry& recorded, const BaselineEntry& current,
                           const Tolerance& tolerance, size_t top_nodes) {
  ConfigurationCheck check;
  check.name = recorded.config.name;
  check.model = recorded.config.model;
  check.recorded = recorded.result;
  check.current = current.result;
  check.allowed_bytes = AllowedChangeBytes(tolerance, recorded.result.peak_bytes);
  check.flags_changed = !(recorded.config.flags == current.config.flags) ||
                        recorded.config.model != current.config.model;
  check.recorded_plan = recorded.plan;
  check.plan_replayed = recorded.plan && current.plan && *recorded.plan == *current.plan;
  check.recorded_largest_micro_batch = recorded.largest_fitting_micro_batch;
  check.current_largest_micro_batch = current.largest_fitting_micro_batch;
  int64_t change = check.PeakChange();
  if (change > check.allowed_bytes) {
    check.status = CheckStatus::kRegression;
  } else if (-change > check.allowed_bytes) {
    check.status = CheckStatus::kImprovement;
  } else {
    check.status = CheckStatus::kPass;
  }
  std::vector<NodeGrowth> grown = GrownNodes(recorded.result, current.result);
  check.grown_node_count = grown.size();
  if (grown.size() > top_nodes) grown.resize(top_nodes);
  check.grown_nodes = std::move(grown);
  return check;
}

}  // namespace

size_t CheckReport::Count(CheckStatus status) const {
  return static_cast<size_t>(
      std::count_if(configurations.begin(), configurations.end(),
                    [status](const ConfigurationCheck& c) { return c.status == status; }));
}

bool CheckReport::Failed() const {
  return std::any_of(configurations.begin(), configurations.end(),
                     [](const ConfigurationCheck& c) { return c.Failed(); });
}

bool ConfigurationCheck::PinnedMicroBatchNoLongerFits() const {
  return recorded_plan && recorded_plan->micro_batch && current_largest_micro_batch &&
         *current_largest_micro_batch < *recorded_plan->micro_batch;
}

CheckReport CompareToBaseline(const Baseline& recorded, const Baseline& current,
                              const Tolerance& tolerance, const CompareOptions& options) {
  CheckReport report;
  report.tolerance = tolerance;
  report.baseline_path = options.baseline_path;
  for (const BaselineEntry& entry : recorded.entries) {
    const BaselineEntry* now = current.Find(entry.config.name);
    if (now == nullptr) {
      ConfigurationCheck missing;
      missing.name = entry.config.name;
      missing.model = entry.config.model;
      missing.status = CheckStatus::kMissing;
      missing.recorded = entry.result;
      missing.allowed_bytes = AllowedChangeBytes(tolerance, entry.result.peak_bytes);
      missing.recorded_plan = entry.plan;
      missing.recorded_largest_micro_batch = entry.largest_fitting_micro_batch;
      report.configurations.push_back(std::move(missing));
      continue;
    }
    report.configurations.push_back(Compare(entry, *now, tolerance, options.top_nodes));
  }
  for (const BaselineEntry& entry : current.entries) {
    if (recorded.Find(entry.config.name) != nullptr) continue;
    ConfigurationCheck added;
    added.name = entry.config.name;
    added.model = entry.config.model;
    added.status = CheckStatus::kNew;
    added.current = entry.result;
    added.current_largest_micro_batch = entry.largest_fitting_micro_batch;
    report.configurations.push_back(std::move(added));
  }
  for (ConfigurationCheck& check : report.configurations) {
    auto line = options.baseline_lines.find(check.name);
    if (line != options.baseline_lines.end()) check.baseline_line = line->second;
  }
  return report;
}

}  // namespace memplan
