#include "analyzer/text/number_format.h"

#include <cstdio>

namespace memplan {

std::string FormatFixed(double value, int decimals) {
  char buffer[64];
  std::snprintf(buffer, sizeof(buffer), "%.*f", decimals, value);
  return buffer;
}

std::string FormatPercent(int64_t part, int64_t whole) {
  return whole > 0
             ? FormatFixed(100.0 * static_cast<double>(part) / static_cast<double>(whole), 0) + "%"
             : "-";
}

}  // namespace memplan
