#include "analyzer/vocabulary/attention_mode.h"

#include "name_table_checks.h"

namespace memplan {
namespace {

TEST_CASE("attention mode names round-trip, unknown ones list the choices", "[vocabulary]") {
  vocabulary_test::CheckRoundTrip(kAttentionModeNames, ParseAttentionMode);
  vocabulary_test::CheckParseError(
      ParseAttentionMode, "flash",
      "unknown attention mode 'flash' (choose one of: eager, sdpa, auto)");
}

}  // namespace
}  // namespace memplan
