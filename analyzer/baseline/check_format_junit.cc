// JUnit XML (the de-facto schema Jenkins, GitLab and GitHub test reporters read): one <testsuite>
// with one <testcase> per configuration; a regression or a missing configuration is a <failure>,
// a configuration new to the baseline is <skipped>. Exact bytes everywhere: this is for machines.

#include "analyzer/baseline/check_format_internal.h"

namespace memplan::check_format {
namespace {

// Escapes XML text; in attribute values (attribute = true) tab and line breaks are written as
// character references, because a parser normalizes literal ones to spaces. XML 1.0 forbids the
// other control characters even as references, so they become '?'.
std::string Xml(std::string_view text, bool attribute) {
  std::string out;
  for (char c : text) {
    unsigned char u = static_cast<unsigned char>(c);
    switch (c) {
      case '&':
        out += "&amp;";
        break;
      case '<':
        out += "&lt;";
        break;
      case '>':
        out += "&gt;";
        break;
      case '"':
        out += "&quot;";
        break;
      case '\'':
        out += "&apos;";
        break;
      case '\t':
        out += attribute ? "&#9;" : "\t";
        break;
      case '\n':
        out += attribute ? "&#10;" : "\n";
        break;
      case '\r':
        out += "&#13;";
        break;
      default:
        out += (u < 0x20 || u == 0x7f) ? '?' : c;
    }
  }
  return out;
}

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
      "    <testcase classname=\"memplan.check\" name=\"" + Xml(check.name, true) + "\"";
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
             Xml(PeakLine(check), true) + "\">" + Xml(body, false) +
             "</failure>\n    </testcase>\n";
    }
    case CheckStatus::kMissing:
      return open + ">\n      <failure type=\"missing\" message=\"" +
             Xml("in the baseline but not analysed in this run", true) + "\"/>\n    </testcase>\n";
    case CheckStatus::kNew:
      return open + ">\n      <skipped message=\"not in the baseline\"/>\n    </testcase>\n";
    case CheckStatus::kPass:
    case CheckStatus::kImprovement:
      return open + ">\n      <system-out>" +
             Xml(std::string(CheckStatusName(check.status)) + ": " + PeakLine(check) + "\n" +
                     PlanLine(check),
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
  out +=
      "      <property name=\"tolerance\" value=\"" + Xml(report.tolerance.text, true) + "\"/>\n";
  if (!report.baseline_path.empty())
    out +=
        "      <property name=\"baseline\" value=\"" + Xml(report.baseline_path, true) + "\"/>\n";
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
    out += "      <property name=\"baseline\" value=\"" + Xml(baseline_path, true) + "\"/>\n";
    out += "    </properties>\n";
  }
  out += "    <testcase classname=\"memplan.check\" name=\"memplan check\">\n";
  out += "      <error type=\"error\" message=\"" + Xml(message, true) + "\">" +
         Xml(std::string(message), false) + "</error>\n";
  out += "    </testcase>\n";
  out += "  </testsuite>\n";
  out += "</testsuites>\n";
  return out;
}

}  // namespace memplan::check_format
