#include "analyzer/vocabulary/optimizer_impl.h"

#include "name_table_checks.h"

namespace memplan {
namespace {

TEST_CASE("optimizer implementation names round-trip, unknown ones list the choices",
          "[vocabulary]") {
  vocabulary_test::CheckRoundTrip(kOptimizerImplNames, ParseOptimizerImpl);
  vocabulary_test::CheckParseError(
      ParseOptimizerImpl, "nope",
      "unknown optimizer implementation 'nope' (choose one of: foreach, fused, for-loop)");
  CHECK(kDefaultCliOptimizerImpl == OptimizerImpl::kForeach);
}

TEST_CASE("only torch.optim's classes are labelled with an implementation", "[vocabulary]") {
  CHECK(OptimizerLabel(OptimizerKind::kAdam, OptimizerImpl::kForeach) == "adam (foreach)");
  CHECK(OptimizerLabel(OptimizerKind::kAdamW, OptimizerImpl::kFused) == "adamw (fused)");
  CHECK(OptimizerLabel(OptimizerKind::kMomentum, OptimizerImpl::kForLoop) == "momentum (for-loop)");
  CHECK(OptimizerLabel(OptimizerKind::kAdamW8bit, OptimizerImpl::kForeach) == "adamw8bit");
  CHECK(OptimizerLabel(OptimizerKind::kAdafactor, OptimizerImpl::kForeach) == "adafactor");
  CHECK(OptimizerLabel(OptimizerKind::kLion, OptimizerImpl::kForeach) == "lion");
}

}  // namespace
}  // namespace memplan
