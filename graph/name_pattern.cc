#include "graph/name_pattern.h"

#include <regex>
#include <utility>

namespace memplan {

struct NamePattern::Compiled {
  std::regex regex;
};

NamePattern::NamePattern(std::string text, std::shared_ptr<const Compiled> compiled)
    : text_(std::move(text)), compiled_(std::move(compiled)) {}

Expected<NamePattern> NamePattern::Compile(const std::string& pattern, const std::string& flag) {
  try {
    auto compiled =
        std::make_shared<const Compiled>(Compiled{std::regex(pattern, std::regex::ECMAScript)});
    return NamePattern(pattern, std::move(compiled));
  } catch (const std::regex_error& e) {
    return MakeError(flag + ": '" + pattern + "' is not a valid regular expression (" + e.what() +
                     ")");
  }
}

bool NamePattern::Matches(std::string_view name) const {
  return std::regex_search(name.begin(), name.end(), compiled_->regex);
}

}  // namespace memplan
