#pragma once
// Number formatting shared by the text, markdown and HTML reports, so they print the same figure
// the same way.

#include <cstdint>
#include <string>

namespace memplan {

// `value` with `decimals` digits after the point ("%.*f").
std::string FormatFixed(double value, int decimals);

// part / whole as a whole percentage ("42%"), or "-" when `whole` is not positive.
std::string FormatPercent(int64_t part, int64_t whole);

}  // namespace memplan
