#include "analyzer/vocabulary/name_table.h"

#include "name_table_checks.h"

namespace memplan {
namespace {

// A vocabulary of this test's own, declared as every header under analyzer/vocabulary/ declares
// one, so the macros are checked apart from any real vocabulary.
#define MEMPLAN_TEST_FRUITS(X) \
  X(kApple, "apple")           \
  X(kPear, "pear")             \
  X(kQuince, "quince")
MEMPLAN_VOCABULARY(TestFruit, MEMPLAN_TEST_FRUITS, "fruit");

#define MEMPLAN_TEST_COLOURS(X) X(kRed, "red") X(kGreen, "green")
MEMPLAN_NAMED_ENUM(TestColour, MEMPLAN_TEST_COLOURS);

TEST_CASE("a declared vocabulary lists its enumerators in order with their names", "[vocabulary]") {
  static_assert(kTestFruitNames.size() == 3);
  static_assert(kTestFruitNames[2].value == TestFruit::kQuince);
  static_assert(kTestFruitNames[2].name == "quince");
  vocabulary_test::CheckRoundTrip(kTestFruitNames, ParseTestFruit);
  CHECK(TestFruitName(TestFruit::kPear) == "pear");
  CHECK(TestColourName(TestColour::kGreen) == "green");
}

TEST_CASE("a declared vocabulary's parse names the concept and lists the choices", "[vocabulary]") {
  vocabulary_test::CheckParseError(ParseTestFruit, "plum",
                                   "unknown fruit 'plum' (choose one of: apple, pear, quince)");
}

TEST_CASE("FindName, ValuesOf and JoinNames read a table", "[vocabulary]") {
  CHECK(FindName(kTestFruitNames, "pear") == TestFruit::kPear);
  CHECK_FALSE(FindName(kTestFruitNames, "Pear").has_value());
  constexpr std::array<TestColour, 2> kColours = ValuesOf(kTestColourNames);
  CHECK(kColours[0] == TestColour::kRed);
  CHECK(kColours[1] == TestColour::kGreen);
  CHECK(JoinNames(kTestFruitNames, ", ", " or ") == "apple, pear or quince");
  CHECK(JoinNames(kTestFruitNames, "|", "|") == "apple|pear|quince");
}

}  // namespace
}  // namespace memplan
