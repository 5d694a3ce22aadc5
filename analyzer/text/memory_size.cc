#include "analyzer/text/memory_size.h"

#include <array>
#include <cctype>
#include <cmath>
#include <cstdio>
#include <limits>

namespace memplan {
namespace {

// GCC/Clang extension, marked so -Wpedantic accepts it: exact arithmetic for mantissa * unit.
__extension__ using Int128 = __int128;

struct Unit {
  std::string_view suffix;  // lower case
  int64_t bytes;
};

// Longest suffixes first is not needed: the whole remaining text must equal one suffix.
constexpr std::array<Unit, 14> kUnits = {{
    {"", 1},
    {"b", 1},
    {"k", kKiB},
    {"kib", kKiB},
    {"kb", 1'000},
    {"m", kMiB},
    {"mib", kMiB},
    {"mb", 1'000'000},
    {"g", kGiB},
    {"gib", kGiB},
    {"gb", 1'000'000'000},
    {"t", kTiB},
    {"tib", kTiB},
    {"tb", 1'000'000'000'000},
}};

// Mantissas are capped well below 2^127 / 2^40 so mantissa * unit cannot overflow Int128.
constexpr Int128 kMaxMantissa = static_cast<Int128>(1'000'000'000'000) * 1'000'000'000'000;

Error SizeError(std::string_view text, std::string_view why) {
  return MakeError("invalid memory size '" + std::string(text) + "': " + std::string(why) +
                   " (examples: 24G = 24 GiB, 24GB = 24*10^9 bytes, 512MiB, 1.5T)");
}

}  // namespace

Expected<int64_t> ParseMemorySize(std::string_view text) {
  size_t i = 0;
  if (i < text.size() && (text[i] == '-' || text[i] == '+')) {
    if (text[i] == '-') return SizeError(text, "a size must be positive");
    ++i;
  }
  Int128 mantissa = 0;
  int fraction_digits = 0;
  bool any_digit = false;
  bool seen_point = false;
  for (; i < text.size(); ++i) {
    char c = text[i];
    if (c == '.' && !seen_point) {
      seen_point = true;
      continue;
    }
    if (!std::isdigit(static_cast<unsigned char>(c))) break;
    any_digit = true;
    mantissa = mantissa * 10 + (c - '0');
    if (mantissa > kMaxMantissa) return SizeError(text, "too many digits");
    if (seen_point) ++fraction_digits;
  }
  if (!any_digit) return SizeError(text, "expected a number");
  if (i < text.size() && text[i] == ' ') ++i;

  std::string suffix;
  for (; i < text.size(); ++i)
    suffix.push_back(static_cast<char>(std::tolower(static_cast<unsigned char>(text[i]))));
  const Unit* unit = nullptr;
  for (const Unit& u : kUnits)
    if (u.suffix == suffix) unit = &u;
  if (unit == nullptr) return SizeError(text, "unknown unit '" + suffix + "'");

  Int128 bytes = mantissa * unit->bytes;
  for (int d = 0; d < fraction_digits; ++d) bytes /= 10;  // exact decimal, rounded down
  if (bytes > std::numeric_limits<int64_t>::max()) return SizeError(text, "too large");
  if (bytes <= 0) return SizeError(text, "a size must be at least one byte");
  return static_cast<int64_t>(bytes);
}

std::string FormatBytes(int64_t bytes) {
  // Work on the magnitude as a double; INT64_MIN has no int64 negation.
  double magnitude = std::fabs(static_cast<double>(bytes));
  const char* sign = bytes < 0 ? "-" : "";
  char buffer[64];
  if (magnitude < static_cast<double>(kKiB)) {
    std::snprintf(buffer, sizeof buffer, "%s%.0f B", sign, magnitude);
    return buffer;
  }
  constexpr std::array<const char*, 5> kNames = {"KiB", "MiB", "GiB", "TiB", "PiB"};
  size_t unit = 0;
  double scaled = magnitude / 1024.0;
  // Move up while the value would print as 1024.0 or more (rounding included).
  while (unit + 1 < kNames.size() && scaled >= 1023.95) {
    scaled /= 1024.0;
    ++unit;
  }
  std::snprintf(buffer, sizeof buffer, "%s%.1f %s", sign, scaled, kNames[unit]);
  return buffer;
}

}  // namespace memplan
