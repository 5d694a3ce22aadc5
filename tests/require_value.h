#pragma once
// The value of an Expected a test needs to succeed. On an error the test stops there (REQUIRE),
// and its report shows the error message after `context` (the input tried, when there is one).

#include <catch2/catch.hpp>

#include <string>
#include <utility>

#include "graph/expected.h"

namespace memplan::testing {

template <class T>
T RequireValue(Expected<T> value, const std::string& context = "") {
  const std::string error = value.ok() ? "" : value.error().message;
  INFO(context << (context.empty() || error.empty() ? "" : ": ") << error);
  REQUIRE(value.ok());
  return std::move(value).value();
}

}  // namespace memplan::testing
