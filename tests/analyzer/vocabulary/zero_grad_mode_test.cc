#include "analyzer/vocabulary/zero_grad_mode.h"

#include "name_table_checks.h"

namespace memplan {
namespace {

TEST_CASE("zero_grad mode names round-trip, unknown ones list the choices", "[vocabulary]") {
  vocabulary_test::CheckRoundTrip(kZeroGradModeNames, ParseZeroGradMode);
  vocabulary_test::CheckParseError(
      ParseZeroGradMode, "none",
      "unknown zero_grad mode 'none' (choose one of: set_to_none, zero)");
}

}  // namespace
}  // namespace memplan
