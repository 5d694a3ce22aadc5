#include "analyzer/vocabulary/amp_mode.h"

#include "name_table_checks.h"

namespace memplan {
namespace {

TEST_CASE("AMP mode names round-trip, unknown ones list the choices", "[vocabulary]") {
  vocabulary_test::CheckRoundTrip(kAmpModeNames, ParseAmpMode);
  vocabulary_test::CheckParseError(
      ParseAmpMode, "apex",
      "unknown AMP mode 'apex' (choose one of: autocast, master-weights, pure)");
}

}  // namespace
}  // namespace memplan
