// Markdown check report, sized for a pull-request comment: a headline, one table row per
// configuration, and a collapsed breakdown for each configuration whose peak changed beyond the
// tolerance.

#include "analyzer/baseline/check_format_internal.h"
#include "analyzer/text/markup.h"
#include "analyzer/text/memory_size.h"
#include "analyzer/vocabulary/enum_table.h"

namespace memplan::check_format {
namespace {

// A table cell: '|' would end the cell and a newline the row. Text goes in a code span unless it
// contains a backtick, which would end the span.
std::string Code(std::string_view text) {
  std::string cell = ReplaceChars(text, {{'|', "\\|"}, {'\n', " "}, {'\r', " "}});
  if (cell.find('`') != std::string::npos) return cell;
  return "`" + cell + "`";
}

// The emoji GitHub renders before each status's name in the table's first column.
constexpr EnumTable<CheckStatus, std::string_view, 5> kStatusEmoji = {{
    {CheckStatus::kPass, ":white_check_mark:"},
    {CheckStatus::kImprovement, ":chart_with_downwards_trend:"},
    {CheckStatus::kRegression, ":x:"},
    {CheckStatus::kMissing, ":x:"},
    {CheckStatus::kNew, ":new:"},
}};
static_assert(ListsEvery(kStatusEmoji, kCheckStatusNames));

// ":white_check_mark: pass", ":x: regression", ...
std::string StatusCell(CheckStatus status) {
  return std::string(ValueOf(kStatusEmoji, status)) + " " + std::string(CheckStatusName(status));
}

std::string GrowthCell(const ConfigurationCheck& check) {
  std::string out;
  for (const NodeGrowth& node : check.grown_nodes) {
    if (!out.empty()) out += ", ";
    out += Code(node.node) + " " + SignedBytes(node.Growth());
    if (node.IsNew()) out += " (new)";
  }
  if (check.grown_node_count > check.grown_nodes.size())
    out += " and " + std::to_string(check.grown_node_count - check.grown_nodes.size()) + " more";
  return out;
}

std::string Row(const ConfigurationCheck& check) {
  std::string recorded =
      check.status == CheckStatus::kNew ? "—" : FormatBytes(check.recorded.peak_bytes);
  std::string current =
      check.status == CheckStatus::kMissing ? "—" : FormatBytes(check.current.peak_bytes);
  std::string change = "—";
  if (check.status != CheckStatus::kNew && check.status != CheckStatus::kMissing)
    change = SignedBytes(check.PeakChange()) + " (" +
             SignedPercent(check.PeakChange(), check.recorded.peak_bytes) + ")";
  return "| " + StatusCell(check.status) + " | " + Code(check.name) + " | " + recorded + " | " +
         current + " | " + change + " | " + GrowthCell(check) + " |\n";
}

std::string Breakdown(const ConfigurationCheck& check) {
  std::string out = "<details><summary>Breakdown of " + Code(check.name) + "</summary>\n\n";
  if (std::string plan = PlanSentence(check); !plan.empty()) out += plan + ".\n\n";
  out += "| category | baseline | current | change |\n";
  out += "|---|--:|--:|--:|\n";
  for (MemoryCategory category : kAllMemoryCategories) {
    int64_t before = check.recorded.breakdown[category];
    int64_t after = check.current.breakdown[category];
    out += "| " + std::string(MemoryCategoryName(category)) + " | " + FormatBytes(before) + " | " +
           FormatBytes(after) + " | " + SignedBytes(after - before) + " |\n";
  }
  int64_t saved_before = check.recorded.saved_activation_bytes;
  int64_t saved_after = check.current.saved_activation_bytes;
  out += "| saved for backward | " + FormatBytes(saved_before) + " | " + FormatBytes(saved_after) +
         " | " + SignedBytes(saved_after - saved_before) + " |\n";
  out += "| **peak** | " + std::to_string(check.recorded.peak_bytes) + " B | " +
         std::to_string(check.current.peak_bytes) + " B | " + std::to_string(check.PeakChange()) +
         " B (tolerance " + std::to_string(check.allowed_bytes) + " B) |\n";
  out += "\n</details>\n";
  return out;
}

}  // namespace

std::string FormatMarkdown(const CheckReport& report) {
  std::string out = "## memplan memory check\n\n";
  out += report.Failed() ? ":x: **Memory regression** — "
                         : ":white_check_mark: **Within tolerance** — ";
  out += StatusCounts(report) + "; tolerance " + report.tolerance.text;
  if (!report.baseline_path.empty()) out += ", baseline " + Code(report.baseline_path);
  out += ".\n\n";
  out +=
      "| status | configuration | baseline peak | current peak | change | saved activations grew "
      "at |\n";
  out += "|---|---|--:|--:|--:|---|\n";
  for (const ConfigurationCheck& check : report.configurations) out += Row(check);
  for (const ConfigurationCheck& check : report.configurations) {
    if (check.status != CheckStatus::kRegression && check.status != CheckStatus::kImprovement)
      continue;
    out += "\n" + Breakdown(check);
  }
  bool improved =
      report.Count(CheckStatus::kImprovement) > 0 || report.Count(CheckStatus::kNew) > 0;
  if (improved)
    out +=
        "\nRe-record the baseline with `memplan baseline` to lock in improvements and new "
        "configurations.\n";
  return out;
}

// The comment a pipeline posts is never empty: an error that stopped `check` (exit 2) gets the
// same heading and the one-line error.
std::string FormatMarkdownError(std::string_view message, std::string_view baseline_path) {
  std::string out = "## memplan memory check\n\n:warning: **Could not run** — ";
  out += ReplaceChars(message, {{'\n', " "}, {'\r', " "}});
  if (!baseline_path.empty()) out += " (baseline " + Code(baseline_path) + ")";
  out += ".\n";
  return out;
}

}  // namespace memplan::check_format
