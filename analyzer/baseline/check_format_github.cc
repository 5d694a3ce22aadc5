// GitHub Actions workflow commands: `::error file=F,title=T::message` annotates file F in the
// pull request and fails nothing by itself (the exit code does). A configuration's change is
// annotated on its model file (what the pull request touched); a missing configuration, the
// summary and errors on the baseline file. Escaping follows the runner's
// rules: in the message '%', CR and LF become %25, %0D, %0A; in property values ':' and ','
// additionally become %3A and %2C.

#include <filesystem>

#include "analyzer/baseline/check_format_internal.h"
#include "analyzer/text/markup.h"
#include "analyzer/text/memory_size.h"

namespace memplan::check_format {
namespace {

std::string EscapeData(std::string_view text) {
  return ReplaceChars(text, {{'%', "%25"}, {'\r', "%0D"}, {'\n', "%0A"}});
}

std::string EscapeProperty(std::string_view text) {
  return ReplaceChars(EscapeData(text), {{':', "%3A"}, {',', "%2C"}});
}

// `line` is the configuration's line in the baseline file (0: none), so the annotation sits on
// the configuration rather than on the file's first line.
std::string Command(std::string_view kind, std::string_view baseline_path, int line,
                    std::string_view title, std::string_view message) {
  std::string out = "::" + std::string(kind) + " ";
  if (!baseline_path.empty()) {
    out += "file=" + EscapeProperty(baseline_path) + ",";
    if (line > 0) out += "line=" + std::to_string(line) + ",";
  }
  out += "title=" + EscapeProperty(title) + "::" + EscapeData(message) + "\n";
  return out;
}

std::string Command(std::string_view kind, const CheckReport& report, std::string_view title,
                    std::string_view message) {
  return Command(kind, report.baseline_path, 0, title, message);
}

std::string Command(std::string_view kind, const CheckReport& report,
                    const ConfigurationCheck& check, std::string_view title,
                    std::string_view message) {
  return Command(kind, report.baseline_path, check.baseline_line, title, message);
}

// The model file of a configuration as the pull request names it: the path the baseline recorded
// (relative to the baseline's folder) joined to that folder. Empty without a model.
std::string ModelFile(const CheckReport& report, const ConfigurationCheck& check) {
  if (check.model.empty()) return "";
  const std::filesystem::path model(check.model);
  if (model.is_absolute()) return model.lexically_normal().string();
  return (std::filesystem::path(report.baseline_path).parent_path() / model)
      .lexically_normal()
      .string();
}

// An annotation on what changed: the configuration's model (the file a pull request touches),
// else the configuration's line in the baseline.
std::string ModelCommand(std::string_view kind, const CheckReport& report,
                         const ConfigurationCheck& check, std::string_view title,
                         std::string_view message) {
  const std::string file = ModelFile(report, check);
  if (file.empty()) return Command(kind, report, check, title, message);
  return Command(kind, file, 0, title, message);
}

// The message with the plan sentence appended, when there is one.
std::string WithPlan(std::string message, const ConfigurationCheck& check) {
  std::string plan = PlanSentence(check);
  if (!plan.empty()) message += " Plan: " + plan + ".";
  return message;
}

std::string PeakChangeSentence(const ConfigurationCheck& check, std::string_view verb) {
  int64_t change = check.PeakChange();
  return "Predicted peak of " + check.name + " " + std::string(verb) + " from " +
         FormatBytes(check.recorded.peak_bytes) + " to " + FormatBytes(check.current.peak_bytes) +
         " (" + SignedBytes(change) + ", " + SignedPercent(change, check.recorded.peak_bytes) + ")";
}

}  // namespace

std::string FormatGithub(const CheckReport& report) {
  std::string out;
  const std::string& tolerance = report.tolerance.text;
  for (const ConfigurationCheck& check : report.configurations) {
    switch (check.status) {
      case CheckStatus::kRegression: {
        std::string message = PeakChangeSentence(check, "grew") + ", beyond the tolerance of " +
                              tolerance + " (" + FormatBytes(check.allowed_bytes) + ").";
        if (!check.grown_nodes.empty())
          message += " Saved activations grew at: " + GrownNodesSentence(check) + ".";
        out += ModelCommand("error", report, check, "memplan memory regression in " + check.name,
                            WithPlan(message, check));
        break;
      }
      case CheckStatus::kMissing:
        out += Command("error", report, check, "memplan configuration missing: " + check.name,
                       check.name + " is in the baseline but was not analysed in this run.");
        break;
      case CheckStatus::kImprovement:
        out +=
            ModelCommand("notice", report, check, "memplan memory improvement in " + check.name,
                         WithPlan(PeakChangeSentence(check, "shrank") +
                                      ". Re-record the baseline (memplan baseline) to lock it in.",
                                  check));
        break;
      case CheckStatus::kNew:
        out += ModelCommand("notice", report, check,
                            "memplan configuration not in baseline: " + check.name,
                            check.name + " has no recorded result; predicted peak " +
                                FormatBytes(check.current.peak_bytes) + ".");
        break;
      case CheckStatus::kPass:
        break;
    }
    if (check.flags_changed && check.status != CheckStatus::kMissing &&
        check.status != CheckStatus::kNew)
      out +=
          ModelCommand("warning", report, check, "memplan flags changed for " + check.name,
                       "The model path or flags of " + check.name +
                           " differ from the baseline's; the comparison may not be like for like.");
  }
  out += Command(report.Failed() ? "error" : "notice", report, "memplan check",
                 ConfigurationCount(report.configurations.size()) + ": " + StatusCounts(report) +
                     " (tolerance " + tolerance + ").");
  return out;
}

std::string FormatGithubError(std::string_view message, std::string_view baseline_path) {
  return Command("error", baseline_path, 0, "memplan check could not run", message);
}

}  // namespace memplan::check_format
