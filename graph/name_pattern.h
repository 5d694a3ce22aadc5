#pragma once
// A user's regular expression over parameter and node names (--train, --freeze, --lora-targets):
// ECMAScript syntax with search semantics, so a name matches when the pattern occurs anywhere in
// it ("layer1" matches "layer1.0.conv1.weight"; anchor with ^...$ for whole names).
//
// The only place memplan compiles a std::regex: GCC 12 reports false maybe-uninitialized warnings
// inside libstdc++'s <regex> under the sanitizers at -O1 (bug 105562), so name_pattern.cc alone is
// built without that warning (graph/CMakeLists.txt) and no other file includes <regex>.

#include <memory>
#include <string>
#include <string_view>

#include "graph/expected.h"

namespace memplan {

class NamePattern {
 public:
  // An invalid pattern is an error naming `flag` (one line).
  static Expected<NamePattern> Compile(const std::string& pattern, const std::string& flag);

  bool Matches(std::string_view name) const;
  const std::string& text() const { return text_; }

 private:
  struct Compiled;
  NamePattern(std::string text, std::shared_ptr<const Compiled> compiled);

  std::string text_;
  std::shared_ptr<const Compiled> compiled_;
};

}  // namespace memplan
