#include "analyzer/vocabulary/loss_kind.h"

#include "name_table_checks.h"

namespace memplan {
namespace {

TEST_CASE("Loss names round-trip, unknown ones list the choices", "[vocabulary]") {
  vocabulary_test::CheckRoundTrip(kLossKindNames, ParseLossKind);
  CHECK(LossKindName(LossKind::kCrossEntropy) == "cross_entropy");
  CHECK(LossKindName(LossKind::kMse) == "mse");
  vocabulary_test::CheckParseError(
      ParseLossKind, "nll", "unknown loss 'nll' (choose one of: auto, cross_entropy, mse, sum)");
}

}  // namespace
}  // namespace memplan
