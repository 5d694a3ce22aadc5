#include "analyzer/vocabulary/recompute_unit.h"

#include "name_table_checks.h"

namespace memplan {
namespace {

TEST_CASE("Recompute unit names round-trip, unknown ones list the choices", "[vocabulary]") {
  vocabulary_test::CheckRoundTrip(kRecomputeUnitNames, ParseRecomputeUnit);
  vocabulary_test::CheckParseError(
      ParseRecomputeUnit, "layer",
      "unknown recompute unit 'layer' (choose one of: auto, node, module)");
}

}  // namespace
}  // namespace memplan
