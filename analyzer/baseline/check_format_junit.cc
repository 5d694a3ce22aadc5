// JUnit XML (the de-facto schema Jenkins, GitLab and GitHub test reporters read): one <testsuite>
// with one <testcase> per configuration; a regression or a missing configuration is a <failure>,
// a configuration new to the baseline is <skipped>. Exact bytes everywhere: this is for machines.

#include "analyzer/baseline/check_format_internal.h"
#include "analyzer/text/markup.h"

namespace memplan::check_format {
namespace {

std::string PeakLine(const ConfigurationCheck& check) {
  int64_t change = check.PeakChange();
  return "peak " + std::to_string(check.recorded.peak_bytes) + " B -> " +
         std::to_string(check.current.peak_bytes) + " B (" + (change > 0 ? "+" : "") +
         std::to_string(change) + " B, " + SignedPercent(change, check.recorded.peak_bytes) +
         "), tolerance " + std::to_string(check.allowed_bytes) + " B";
}

// The plan sentence as a line of its own, or nothing.
std::string PlanLine(const ConfigurationCheck& check) {
  std::string plan = PlanSentence(check);
  return plan.empty() ? std::string() : plan + "\n";
}

std::string TestCase(const ConfigurationCheck& check) {
  std::string open =
      "    <testcase classname=\"memplan.check\" name=\"" + EscapeMarkup(check.name, true) + "\"";
  switch (check.status) {
    case CheckStatus::kRegression: {
      std::string body = "model " + check.model + "\n" + PlanLine(check);
      for (const NodeGrowth& node : check.grown_nodes)
        body += "saved activations of " + node.node + ": " + std::to_string(node.recorded_bytes) +
                " B -> " + std::to_string(node.current_bytes) + " B\n";
      if (check.grown_node_count > check.grown_nodes.size())
        body += std::to_string(check.grown_node_count - check.grown_nodes.size()) +
                " more nodes grew\n";
      return open + ">\n      <failure type=\"regression\" message=\"" +
             EscapeMarkup(PeakLine(check), true) + "\">" + EscapeMarkup(body, false) +
             "</failure>\n    </testcase>\n";
    }
    case CheckStatus::kMissing:
      return open + ">\n      <failure type=\"missing\" message=\"" +
             EscapeMarkup("in the baseline but not analysed in this run", true) +
             "\"/>\n    </testcase>\n";
    case CheckStatus::kNew:
      return open + ">\n      <skipped message=\"not in the baseline\"/>\n    </testcase>\n";
    case CheckStatus::kPass:
    case CheckStatus::kImprovement:
      return open + ">\n      <system-out>" +
             EscapeMarkup(std::string(CheckStatusName(check.status)) + ": " + PeakLine(check) +
                              "\n" + PlanLine(check),
                          false) +
             "</system-out>\n    </testcase>\n";
  }
  return open + "/>\n";
}

}  // namespace

std::string FormatJunit(const CheckReport& report) {
  size_t tests = report.configurations.size();
  size_t failures = report.Count(CheckStatus::kRegression) + report.Count(CheckStatus::kMissing);
  size_t skipped = report.Count(CheckStatus::kNew);
  std::string counts = " tests=\"" + std::to_string(tests) + "\" failures=\"" +
                       std::to_string(failures) + "\" errors=\"0\" skipped=\"" +
                       std::to_string(skipped) + "\"";
  std::string out = "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n";
  out += "<testsuites name=\"memplan check\"" + counts + ">\n";
  out += "  <testsuite name=\"memplan check\"" + counts + ">\n";
  out += "    <properties>\n";
  out += "      <property name=\"tolerance\" value=\"" + EscapeMarkup(report.tolerance.text, true) +
         "\"/>\n";
  if (!report.baseline_path.empty())
    out += "      <property name=\"baseline\" value=\"" + EscapeMarkup(report.baseline_path, true) +
           "\"/>\n";
  out += "    </properties>\n";
  for (const ConfigurationCheck& check : report.configurations) out += TestCase(check);
  out += "  </testsuite>\n";
  out += "</testsuites>\n";
  return out;
}

std::string FormatJunitError(std::string_view message, std::string_view baseline_path) {
  const std::string counts = " tests=\"1\" failures=\"0\" errors=\"1\" skipped=\"0\"";
  std::string out = "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n";
  out += "<testsuites name=\"memplan check\"" + counts + ">\n";
  out += "  <testsuite name=\"memplan check\"" + counts + ">\n";
  if (!baseline_path.empty()) {
    out += "    <properties>\n";
    out +=
        "      <property name=\"baseline\" value=\"" + EscapeMarkup(baseline_path, true) + "\"/>\n";
    out += "    </properties>\n";
  }
  out += "    <testcase classname=\"memplan.check\" name=\"memplan check\">\n";
  out += "      <error type=\"error\" message=\"" + EscapeMarkup(message, true) + "\">" +
         EscapeMarkup(std::string(message), false) + "</error>\n";
  out += "    </testcase>\n";
  out += "  </testsuite>\n";
  out += "</testsuites>\n";
  return out;
}

}  // namespace memplan::check_format
