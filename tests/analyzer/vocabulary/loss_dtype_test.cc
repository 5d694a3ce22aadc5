#include "analyzer/vocabulary/loss_dtype.h"

#include "name_table_checks.h"

namespace memplan {
namespace {

TEST_CASE("loss dtype names round-trip, unknown ones list the choices", "[vocabulary]") {
  vocabulary_test::CheckRoundTrip(kLossDTypeNames, ParseLossDType);
  vocabulary_test::CheckParseError(
      ParseLossDType, "fp8", "unknown loss dtype 'fp8' (choose one of: auto, fp32, bf16, fp16)");
}

}  // namespace
}  // namespace memplan
