#pragma once
// Renderings of a CheckReport, all deterministic (same report -> same bytes):
//   text      for a terminal or CI log: one block per configuration, exact bytes included;
//   markdown  a summary table for a pull-request comment, with a breakdown per changed config;
//   github    GitHub Actions workflow commands (::error / ::warning / ::notice) that annotate
//             the model of the configuration that changed (its path joined to the baseline's
//             folder, as the pull request names it), the baseline file for a missing one and
//             for the summary;
//   junit     JUnit XML, one <testcase> per configuration, <failure> on regression or missing,
//             for CI test-report viewers;
//   json      one object (schema "memplan-check/1") with every configuration's numbers, for
//             scripts.

#include <string>
#include <string_view>

#include "analyzer/baseline/check_report.h"
#include "analyzer/vocabulary/name_table.h"
#include "graph/expected.h"

namespace memplan {

#define MEMPLAN_CHECK_FORMATS(X) \
  X(kText, "text")               \
  X(kMarkdown, "markdown")       \
  X(kGithub, "github")           \
  X(kJunit, "junit")             \
  X(kJson, "json")
MEMPLAN_NAMED_ENUM(CheckFormat, MEMPLAN_CHECK_FORMATS);

// "text" | "markdown" | "github" | "junit" | "json"; the error lists them.
Expected<CheckFormat> ParseCheckFormat(std::string_view name);

std::string FormatCheckReport(const CheckReport& report, CheckFormat format);

// An error that stopped `check` before any comparison (exit 2), in every format a pipeline keeps:
// junit, a suite with one <error> test case; github, one ::error annotation (on the baseline
// file when `baseline_path` is given); markdown, the comment's heading and the error; json,
// {"schema", "error", "exit_code": 2}. Empty for text (stderr carries the error).
std::string FormatCheckError(std::string_view message, std::string_view baseline_path,
                             CheckFormat format);

}  // namespace memplan
