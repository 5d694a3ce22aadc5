#pragma once
// Checks every vocabulary test runs on its name table: the table lists each enumerator once, in
// declaration order (so a new enumerator without a name fails here, not in a report), every
// name parses back to its enumerator, and names are distinct.

#include <catch2/catch.hpp>

#include <set>
#include <string>

#include "analyzer/vocabulary/name_table.h"

namespace memplan::vocabulary_test {

template <class Enum, size_t N, class Parse>
void CheckRoundTrip(const NameTable<Enum, N>& table, Parse parse) {
  std::set<std::string_view> names;
  for (size_t i = 0; i < N; ++i) {
    INFO("entry " << i << " '" << table[i].name << "'");
    CHECK(static_cast<size_t>(table[i].value) == i);
    CHECK(NameOf(table, table[i].value) == table[i].name);
    Expected<Enum> parsed = parse(table[i].name);
    REQUIRE(parsed.ok());
    CHECK(*parsed == table[i].value);
    CHECK(names.insert(table[i].name).second);
  }
}

// `parse(text)` fails with exactly `message`.
template <class Parse>
void CheckParseError(Parse parse, std::string_view text, const std::string& message) {
  auto parsed = parse(text);
  REQUIRE_FALSE(parsed.ok());
  CHECK(parsed.error().message == message);
}

}  // namespace memplan::vocabulary_test
