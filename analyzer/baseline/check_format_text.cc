// Plain-text check report for terminals and CI logs. Human sizes for reading, exact bytes on the
// peak line so a one-byte regression is visible.

#include <cctype>

#include "analyzer/baseline/check_format_internal.h"
#include "analyzer/text/memory_size.h"

namespace memplan::check_format {
namespace {

std::string Upper(std::string_view text) {
  std::string out(text);
  for (char& c : out) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  return out;
}

std::string Padded(std::string text, size_t width) {
  if (text.size() < width) text.append(width - text.size(), ' ');
  return text;
}

void AppendCategoryChanges(const ConfigurationCheck& check, std::string& out) {
  for (MemoryCategory category : kAllMemoryCategories) {
    int64_t before = check.recorded.breakdown[category];
    int64_t after = check.current.breakdown[category];
    if (before == after) continue;
    out += "  " + Padded(std::string(MemoryCategoryName(category)), 20) + FormatBytes(before) +
           " -> " + FormatBytes(after) + " (" + SignedBytes(after - before) + ")\n";
  }
  int64_t saved_before = check.recorded.saved_activation_bytes;
  int64_t saved_after = check.current.saved_activation_bytes;
  if (saved_before != saved_after)
    out += "  " + Padded("saved for backward", 20) + FormatBytes(saved_before) + " -> " +
           FormatBytes(saved_after) + " (" + SignedBytes(saved_after - saved_before) + ")\n";
}

}  // namespace

std::string FormatText(const CheckReport& report) {
  std::string out = "memplan check: " + ConfigurationCount(report.configurations.size());
  if (!report.baseline_path.empty()) out += " against " + report.baseline_path;
  out += ", tolerance " + report.tolerance.text + "\n";
  out += "  " + StatusCounts(report) + "\n";
  for (const ConfigurationCheck& check : report.configurations) {
    out += "\n" + Padded(Upper(CheckStatusName(check.status)), 12) + check.name + " (" +
           check.model + ")\n";
    if (check.status == CheckStatus::kMissing) {
      out += "  in the baseline but not analysed in this run\n";
      continue;
    }
    if (check.status == CheckStatus::kNew) {
      out += "  not in the baseline; peak " + FormatBytes(check.current.peak_bytes) + " (" +
             std::to_string(check.current.peak_bytes) + " B)\n";
      if (std::string plan = PlanSentence(check); !plan.empty()) out += "  " + plan + "\n";
      continue;
    }
    int64_t change = check.PeakChange();
    out += "  peak " + FormatBytes(check.recorded.peak_bytes) + " -> " +
           FormatBytes(check.current.peak_bytes) + " (" + SignedBytes(change) + ", " +
           SignedPercent(change, check.recorded.peak_bytes) + "); exact " +
           std::to_string(check.recorded.peak_bytes) + " -> " +
           std::to_string(check.current.peak_bytes) + " B, tolerance " +
           std::to_string(check.allowed_bytes) + " B\n";
    if (std::string plan = PlanSentence(check); !plan.empty()) out += "  " + plan + "\n";
    AppendCategoryChanges(check, out);
    if (!check.grown_nodes.empty())
      out += "  saved activations grew at: " + GrownNodesSentence(check) + "\n";
    if (check.flags_changed) out += "  note: the model path or flags differ from the baseline's\n";
  }
  out += "\n";
  out += report.Failed() ? "FAILED: memory regression beyond tolerance\n"
                         : "OK: every configuration within tolerance\n";
  return out;
}

}  // namespace memplan::check_format
