#include "analyzer/text/tolerance.h"

#include <cctype>
#include <limits>

#include "analyzer/text/memory_size.h"

namespace memplan {
namespace {

__extension__ using Int128 = __int128;

std::string_view Trim(std::string_view text) {
  while (!text.empty() && std::isspace(static_cast<unsigned char>(text.front())))
    text.remove_prefix(1);
  while (!text.empty() && std::isspace(static_cast<unsigned char>(text.back())))
    text.remove_suffix(1);
  return text;
}

Error ToleranceError(std::string_view text, std::string_view why) {
  return MakeError("invalid tolerance '" + std::string(text) + "': " + std::string(why) +
                   " (examples: 2%, 0.5%, 64MiB, 0)");
}

// Up to this many digits after the point: 0.0001% granularity is far below any useful tolerance
// and keeps numerator and denominator small.
constexpr int kMaxPercentFractionDigits = 4;

Expected<Tolerance> ParsePercent(std::string_view original, std::string_view number) {
  Tolerance tolerance;
  tolerance.kind = Tolerance::Kind::kPercent;
  int64_t numerator = 0;
  int64_t denominator = 1;
  bool any_digit = false;
  bool seen_point = false;
  int fraction_digits = 0;
  for (char c : number) {
    if (c == '.' && !seen_point) {
      seen_point = true;
      continue;
    }
    if (!std::isdigit(static_cast<unsigned char>(c)))
      return ToleranceError(original, "not a number");
    any_digit = true;
    if (seen_point) {
      if (++fraction_digits > kMaxPercentFractionDigits)
        return ToleranceError(original, "at most 4 decimals");
      denominator *= 10;
    }
    numerator = numerator * 10 + (c - '0');
    if (numerator > 1'000'000'000) return ToleranceError(original, "too large");
  }
  if (!any_digit) return ToleranceError(original, "expected a number before '%'");
  tolerance.percent_numerator = numerator;
  tolerance.percent_denominator = denominator;
  return tolerance;
}

// "0.01", ".5", "2.": digits with one decimal point and no unit. "0.0" is a fraction too (zero).
bool IsBareFraction(std::string_view text) {
  return text.find('.') != std::string_view::npos &&
         text.find_first_not_of("0123456789.") == std::string_view::npos;
}

}  // namespace

Expected<Tolerance> ParseTolerance(std::string_view text) {
  std::string_view trimmed = Trim(text);
  if (trimmed.empty()) return ToleranceError(text, "empty");
  Expected<Tolerance> result = Tolerance{};
  if (trimmed.back() == '%') {
    result = ParsePercent(text, Trim(trimmed.substr(0, trimmed.size() - 1)));
  } else if (IsBareFraction(trimmed)) {
    // A fraction f is the percentage 100 f: the same digits over a denominator 100 times smaller.
    result = ParsePercent(text, trimmed);
    if (result.ok()) {
      if (result->percent_denominator % 100 == 0) {
        result->percent_denominator /= 100;
      } else {
        result->percent_numerator *= 100 / result->percent_denominator;
        result->percent_denominator = 1;
      }
    }
  } else if (trimmed.find_first_not_of("0.") == std::string_view::npos &&
             trimmed.find_first_of('0') != std::string_view::npos) {
    // "0", "0.0": zero bytes, which ParseMemorySize rejects as a size.
    Tolerance zero;
    zero.kind = Tolerance::Kind::kBytes;
    result = zero;
  } else {
    Expected<int64_t> bytes = ParseMemorySize(trimmed);
    if (!bytes.ok()) return ToleranceError(text, "neither a percentage nor a size");
    Tolerance sized;
    sized.kind = Tolerance::Kind::kBytes;
    sized.bytes = *bytes;
    result = sized;
  }
  if (!result.ok()) return result;
  result->text = std::string(trimmed);
  return result;
}

Expected<double> RelativeFraction(const Tolerance& tolerance) {
  if (tolerance.kind == Tolerance::Kind::kBytes) {
    if (tolerance.bytes == 0) return 0.0;
    return MakeError("tolerance '" + tolerance.text +
                     "' is a size; this comparison is relative (1% or 0.01)");
  }
  MEMPLAN_CHECK(tolerance.percent_denominator > 0);
  return static_cast<double>(tolerance.percent_numerator) /
         (100.0 * static_cast<double>(tolerance.percent_denominator));
}

int64_t AllowedChangeBytes(const Tolerance& tolerance, int64_t recorded_bytes) {
  MEMPLAN_CHECK(recorded_bytes >= 0);
  if (tolerance.kind == Tolerance::Kind::kBytes) return tolerance.bytes;
  MEMPLAN_CHECK(tolerance.percent_denominator > 0);
  Int128 allowed = static_cast<Int128>(recorded_bytes) * tolerance.percent_numerator /
                   (static_cast<Int128>(100) * tolerance.percent_denominator);
  if (allowed > std::numeric_limits<int64_t>::max()) return std::numeric_limits<int64_t>::max();
  return static_cast<int64_t>(allowed);
}

}  // namespace memplan
