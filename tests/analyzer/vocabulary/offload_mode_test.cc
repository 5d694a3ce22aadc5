#include "analyzer/vocabulary/offload_mode.h"

#include "name_table_checks.h"

namespace memplan {
namespace {

TEST_CASE("offload mode names round-trip, unknown ones list the choices", "[vocabulary]") {
  vocabulary_test::CheckRoundTrip(kOffloadModeNames, ParseOffloadMode);
  vocabulary_test::CheckParseError(
      ParseOffloadMode, "nvme",
      "unknown offload mode 'nvme' (choose one of: none, optimizer, optimizer+params, "
      "activations)");
  CHECK_FALSE(OffloadsOptimizer(OffloadMode::kNone));
  CHECK(OffloadsOptimizer(OffloadMode::kOptimizer));
  CHECK(OffloadsOptimizer(OffloadMode::kOptimizerAndParams));
  CHECK_FALSE(OffloadsOptimizer(OffloadMode::kActivations));
}

}  // namespace
}  // namespace memplan
