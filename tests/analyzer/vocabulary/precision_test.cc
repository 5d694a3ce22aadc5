#include "analyzer/vocabulary/precision.h"

#include "name_table_checks.h"

namespace memplan {
namespace {

TEST_CASE("Precision names round-trip, unknown ones list the choices", "[vocabulary]") {
  vocabulary_test::CheckRoundTrip(kPrecisionNames, ParsePrecision);
  vocabulary_test::CheckParseError(ParsePrecision, "auto",
                                   "unknown precision 'auto' (choose one of: fp32, fp16, bf16)");
  vocabulary_test::CheckParseError(ParsePrecision, "FP16",
                                   "unknown precision 'FP16' (choose one of: fp32, fp16, bf16)");
}

TEST_CASE("A precision choice is a precision or auto, with the same names", "[vocabulary]") {
  vocabulary_test::CheckRoundTrip(kPrecisionChoiceNames, ParsePrecisionChoice);
  for (const auto& [precision, name] : kPrecisionNames) {
    Expected<PrecisionChoice> choice = ParsePrecisionChoice(name);
    REQUIRE(choice.ok());
    CHECK(FixedPrecision(*choice) == precision);
  }
  CHECK(FixedPrecision(PrecisionChoice::kAuto) == std::nullopt);
  vocabulary_test::CheckParseError(
      ParsePrecisionChoice, "fp8",
      "unknown precision 'fp8' (choose one of: fp32, fp16, bf16, auto)");
  CHECK(JoinNames(kPrecisionChoiceNames, ", ", " or ") == "fp32, fp16, bf16 or auto");
}

}  // namespace
}  // namespace memplan
