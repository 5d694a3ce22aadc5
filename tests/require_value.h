#pragma once
// What a test requires of an Expected: its value where it must succeed, its error message where it
// must fail. Either way a wrong outcome stops the test there (REQUIRE).

#include <catch2/catch.hpp>

#include <string>
#include <utility>

#include "graph/expected.h"

namespace memplan::testing {

// The value of an Expected a test needs to succeed; on an error the report shows the message after
// `context` (the input tried, when there is one).
template <class T>
T RequireValue(Expected<T> value, const std::string& context = "") {
  const std::string error = value.ok() ? "" : value.error().message;
  INFO(context << (context.empty() || error.empty() ? "" : ": ") << error);
  REQUIRE(value.ok());
  return std::move(value).value();
}

// The error message of an Expected a test needs to fail; a success stops the test.
template <class T>
std::string RequireError(const Expected<T>& value) {
  REQUIRE_FALSE(value.ok());
  return value.error().message;
}

}  // namespace memplan::testing
