#pragma once
// Small helpers the SVG and HTML writers share: escaping text for markup, formatting
// coordinates deterministically, and writing the finished file.

#include <string>
#include <string_view>

#include "graph/expected.h"

namespace memplan {

// Escapes & < > " ' so `text` is safe in element content and in quoted attributes.
std::string EscapeMarkup(std::string_view text);

// A coordinate with one decimal ("12.5"), never "-0.0", so output is byte-identical across runs.
std::string FormatCoordinate(double value);

// Writes `content` to `path`, replacing it. Error: "cannot write '<path>': <reason>".
Status WriteTextFile(const std::string& path, std::string_view content);

}  // namespace memplan
