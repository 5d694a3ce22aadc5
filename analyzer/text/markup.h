#pragma once
// Small helpers the SVG, HTML and check-report writers share: escaping text for markup (or by a
// format's own rules), formatting coordinates deterministically, and writing the finished file.

#include <initializer_list>
#include <string>
#include <string_view>
#include <utility>

#include "graph/expected.h"

namespace memplan {

// Escapes & < > " ' (the apostrophe as &#39;, which HTML and XML both read) so `text` is safe in
// element content and in quoted attributes. XML 1.0 forbids the control characters other than tab
// and line breaks even as character references, so they become '?'; a carriage return is written
// as &#13; (a parser would fold it into the line break). With `attribute`, tab and line feed are
// references too: a parser normalizes literal ones in attribute values to spaces.
std::string EscapeMarkup(std::string_view text, bool attribute = false);

// `text` with the characters XML 1.0 forbids replaced by '?' (as EscapeMarkup replaces them),
// for a library that escapes the rest (pugixml writes them as references, which XML forbids too).
std::string XmlAllowedText(std::string_view text);

// `text` with each character that `replacements` lists replaced by its text, the others kept:
// ReplaceChars("a|b", {{'|', "\\|"}}) -> "a\\|b".
std::string ReplaceChars(std::string_view text,
                         std::initializer_list<std::pair<char, std::string_view>> replacements);

// A coordinate with one decimal ("12.5"), never "-0.0", so output is byte-identical across runs.
std::string FormatCoordinate(double value);

// Writes `content` to `path`, replacing it. Error: "cannot write '<path>': <reason>".
Status WriteTextFile(const std::string& path, std::string_view content);

}  // namespace memplan
