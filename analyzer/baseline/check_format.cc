#include "analyzer/baseline/check_format.h"

#include <array>
#include <cstdio>

#include "analyzer/baseline/check_format_internal.h"
#include "analyzer/text/memory_size.h"

namespace memplan {

namespace check_format {

std::string ConfigurationCount(size_t count) {
  return std::to_string(count) + (count == 1 ? " configuration" : " configurations");
}

std::string SignedBytes(int64_t change) {
  if (change > 0) return "+" + FormatBytes(change);
  return FormatBytes(change);
}

std::string SignedPercent(int64_t change, int64_t base) {
  if (base == 0) return "n/a";
  char buffer[64];
  std::snprintf(buffer, sizeof buffer, "%+.2f%%",
                static_cast<double>(change) * 100.0 / static_cast<double>(base));
  return buffer;
}

std::string StatusCounts(const CheckReport& report) {
  struct Label {
    CheckStatus status;
    const char* singular;
    const char* plural;
  };
  constexpr std::array<Label, 5> kLabels = {{
      {CheckStatus::kRegression, "regression", "regressions"},
      {CheckStatus::kMissing, "missing", "missing"},
      {CheckStatus::kImprovement, "improvement", "improvements"},
      {CheckStatus::kPass, "passed", "passed"},
      {CheckStatus::kNew, "new", "new"},
  }};
  std::string out;
  for (const Label& label : kLabels) {
    size_t n = report.Count(label.status);
    if (n == 0) continue;
    if (!out.empty()) out += ", ";
    out += std::to_string(n) + " " + (n == 1 ? label.singular : label.plural);
  }
  return out.empty() ? "no configurations" : out;
}

std::string GrownNodesSentence(const ConfigurationCheck& check) {
  std::string out;
  for (const NodeGrowth& node : check.grown_nodes) {
    if (!out.empty()) out += ", ";
    out += node.node + " " + SignedBytes(node.Growth());
    if (node.IsNew()) out += " (new)";
  }
  if (check.grown_node_count > check.grown_nodes.size())
    out += " and " + std::to_string(check.grown_node_count - check.grown_nodes.size()) + " more";
  return out;
}

std::string PlanSentence(const ConfigurationCheck& check) {
  std::string out;
  if (check.plan_replayed) {
    out = "replayed the recorded plan " + PlanFlagsAsArguments(*check.recorded_plan);
  } else if (check.status != CheckStatus::kNew && check.status != CheckStatus::kMissing) {
    out = check.recorded_plan
              ? "re-planned (the configuration changed, so the recorded plan does not apply)"
              : "re-planned (the baseline records no plan: record it again to pin one)";
  }
  const auto& before = check.recorded_largest_micro_batch;
  const auto& after = check.current_largest_micro_batch;
  if (before || after) {
    if (!out.empty()) out += "; ";
    out += "largest micro-batch that fits ";
    if (before && after) {
      int64_t change = *after - *before;
      out += std::to_string(*before) + " -> " + std::to_string(*after) + " (" +
             (change > 0 ? "+" : "") + std::to_string(change) + ")";
    } else {
      out += std::to_string(before ? *before : *after);
    }
  }
  if (check.PinnedMicroBatchNoLongerFits())
    out += "; the recorded micro-batch " + std::to_string(*check.recorded_plan->micro_batch) +
           " no longer fits";
  return out;
}

}  // namespace check_format

Expected<CheckFormat> ParseCheckFormat(std::string_view name) {
  if (std::optional<CheckFormat> format = FindName(kCheckFormatNames, name)) return *format;
  return MakeError("unknown check format '" + std::string(name) +
                   "' (expected one of: " + JoinNames(kCheckFormatNames) + ")");
}

std::string FormatCheckReport(const CheckReport& report, CheckFormat format) {
  switch (format) {
    case CheckFormat::kText:
      return check_format::FormatText(report);
    case CheckFormat::kMarkdown:
      return check_format::FormatMarkdown(report);
    case CheckFormat::kGithub:
      return check_format::FormatGithub(report);
    case CheckFormat::kJunit:
      return check_format::FormatJunit(report);
    case CheckFormat::kJson:
      return check_format::FormatJson(report);
  }
  return check_format::FormatText(report);
}

std::string FormatCheckError(std::string_view message, std::string_view baseline_path,
                             CheckFormat format) {
  switch (format) {
    case CheckFormat::kJunit:
      return check_format::FormatJunitError(message, baseline_path);
    case CheckFormat::kGithub:
      return check_format::FormatGithubError(message, baseline_path);
    case CheckFormat::kMarkdown:
      return check_format::FormatMarkdownError(message, baseline_path);
    case CheckFormat::kJson:
      return check_format::FormatJsonError(message, baseline_path);
    case CheckFormat::kText:
      return {};
  }
  return {};
}

}  // namespace memplan
