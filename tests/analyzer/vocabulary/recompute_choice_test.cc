#include "analyzer/vocabulary/recompute_choice.h"

#include "name_table_checks.h"

namespace memplan {
namespace {

TEST_CASE("Recompute choices and labels round-trip, unknown ones list the choices",
          "[vocabulary]") {
  vocabulary_test::CheckRoundTrip(kRecomputeChoiceNames, ParseRecomputeChoice);
  vocabulary_test::CheckRoundTrip(kRecomputeLabelNames, ParseRecomputeLabel);
  vocabulary_test::CheckParseError(
      ParseRecomputeChoice, "custom",
      "unknown recompute 'custom' (choose one of: none, all, sqrt, optimal, auto)");
  vocabulary_test::CheckParseError(
      ParseRecomputeLabel, "auto",
      "unknown recompute label 'auto' (choose one of: none, all, sqrt, optimal, custom)");
  // A plan's label names the same strategies as the request it came from.
  for (RecomputeChoice c : {RecomputeChoice::kNone, RecomputeChoice::kAll, RecomputeChoice::kSqrt,
                            RecomputeChoice::kOptimal})
    CHECK(ParseRecomputeLabel(RecomputeChoiceName(c)).ok());
}

}  // namespace
}  // namespace memplan
