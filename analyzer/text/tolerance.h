#pragma once
// How far a memory figure may move from its reference before a check fails: `memplan check`
// (predicted peak against the recorded one) and `memplan verify` (measured against predicted)
// read the same grammar:
//   "2%", "0.5 %"        a percentage of the reference
//   "0.01"               a fraction of the reference (a number with a point and no unit): 1%
//   "64MiB", "1G", "4096" an absolute size (units as in analyzer/text/memory_size.h)
//   "0"                  nothing may change
// verify compares relatively and takes only the relative forms (and "0"), see RelativeFraction.
//
// Edges are inclusive: growth exactly equal to the allowance passes, one byte more fails.
// A percentage allowance is floor(recorded_peak * percent / 100), computed exactly (the
// percentage is kept as a decimal fraction, never a double), so "2%" of 1,000,000 B allows
// exactly 20,000 B.

#include <cstdint>
#include <string>
#include <string_view>

#include "graph/expected.h"

namespace memplan {

struct Tolerance {
  enum class Kind : uint8_t { kBytes, kPercent };
  Kind kind = Kind::kPercent;
  int64_t bytes = 0;  // kBytes
  // kPercent: percent = percent_numerator / percent_denominator (a power of ten), e.g. "2.5%"
  // is 25 / 10 and the fraction "0.025" is 250 / 100.
  int64_t percent_numerator = 0;
  int64_t percent_denominator = 1;
  std::string text;  // as the user wrote it, for reports ("2%")
};

// The CLI default: predictions are deterministic, so any growth is a real change; 1% lets
// refinements of the memory model land without re-recording every baseline, while a new layer or
// a widened tensor in any network CI tracks is far larger.
inline constexpr std::string_view kDefaultTolerance = "1%";

// "2%", "2.5 %", "0%", "0.01", "64MiB", "1G", "1048576", "0". Errors name the text.
Expected<Tolerance> ParseTolerance(std::string_view text);

// The tolerance as a fraction of the reference (2% -> 0.02, "0" -> 0). Error for a nonzero
// absolute size, which a relative comparison cannot use.
Expected<double> RelativeFraction(const Tolerance& tolerance);

// Bytes the peak may grow (or shrink, for an improvement) relative to `recorded_bytes`.
int64_t AllowedChangeBytes(const Tolerance& tolerance, int64_t recorded_bytes);

}  // namespace memplan
