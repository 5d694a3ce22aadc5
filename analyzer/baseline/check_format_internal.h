#pragma once
// Pieces the CheckReport formatters share (check_format_*.cc); not part of the public API.

#include <string>
#include <string_view>

#include "analyzer/baseline/check_report.h"

namespace memplan::check_format {

std::string FormatText(const CheckReport& report);
std::string FormatMarkdown(const CheckReport& report);
std::string FormatGithub(const CheckReport& report);
std::string FormatJunit(const CheckReport& report);
std::string FormatJunitError(std::string_view message, std::string_view baseline_path);
std::string FormatGithubError(std::string_view message, std::string_view baseline_path);
std::string FormatJson(const CheckReport& report);
std::string FormatJsonError(std::string_view message, std::string_view baseline_path);
std::string FormatMarkdownError(std::string_view message, std::string_view baseline_path);

// "1 configuration", "2 configurations".
std::string ConfigurationCount(size_t count);
// "+64.0 KiB", "-1.5 MiB", "0 B".
std::string SignedBytes(int64_t change);
// change relative to base, two decimals with sign: "+6.25%", "-0.50%"; "n/a" when base is 0.
std::string SignedPercent(int64_t change, int64_t base);
// "1 regression, 2 passed, 1 improvement" — only non-zero counts, fixed order.
std::string StatusCounts(const CheckReport& report);
// "/fc3/Gemm +8.0 KiB (new), /relu3/Relu +8.0 KiB (new)", plus "and N more" beyond the list.
std::string GrownNodesSentence(const ConfigurationCheck& check);
// "replayed the recorded plan --micro-batch 64 --precision fp32 --recompute none; largest
// micro-batch that fits 213 -> 97 (-116)"; empty when there is nothing to say.
std::string PlanSentence(const ConfigurationCheck& check);

}  // namespace memplan::check_format
