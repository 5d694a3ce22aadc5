#include "analyzer/vocabulary/optimizer_kind.h"

#include "name_table_checks.h"

namespace memplan {
namespace {

TEST_CASE("Optimizer names round-trip, unknown ones list the choices", "[vocabulary]") {
  vocabulary_test::CheckRoundTrip(kOptimizerKindNames, ParseOptimizerKind);
  // sgd, momentum, adam, adamw, adafactor, adamw8bit, paged-adamw8bit, lion
  CHECK(kOptimizerKindNames.size() == 8);
  CHECK(OptimizerKindName(OptimizerKind::kAdamW) == "adamw");
  vocabulary_test::CheckParseError(
      ParseOptimizerKind, "Adam",
      "unknown optimizer 'Adam' (choose one of: sgd, momentum, adam, adamw, adafactor, "
      "adamw8bit, paged-adamw8bit, lion)");
}

}  // namespace
}  // namespace memplan
