// ReplaceChars, the escaping the GitHub and Markdown check reports, the HTML report's embedded
// JSON and the CLI's one-line errors share.

#include <catch2/catch.hpp>

#include "analyzer/text/markup.h"

namespace memplan {
namespace {

TEST_CASE("ReplaceChars replaces each listed character and keeps the rest", "[report]") {
  CHECK(ReplaceChars("a|b\nc", {{'|', "\\|"}, {'\n', " "}}) == "a\\|b c");
  // A replacement may be longer, or empty (the character is dropped).
  CHECK(ReplaceChars("50%\r\n", {{'%', "%25"}, {'\r', ""}, {'\n', "; "}}) == "50%25; ");
  // Replacements are not rescanned: "%" -> "%25" does not become "%2525".
  CHECK(ReplaceChars("%%", {{'%', "%25"}}) == "%25%25");
  CHECK(ReplaceChars("", {{'a', "b"}}).empty());
  CHECK(ReplaceChars("plain", {}) == "plain");
}

}  // namespace
}  // namespace memplan
