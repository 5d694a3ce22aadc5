#include "analyzer/vocabulary/alternative_kind.h"

#include "name_table_checks.h"

namespace memplan {
namespace {

TEST_CASE("alternative kind names round-trip, unknown ones list the choices", "[vocabulary]") {
  vocabulary_test::CheckRoundTrip(kAlternativeKindNames, ParseAlternativeKind);
  vocabulary_test::CheckParseError(
      ParseAlternativeKind, "tp",
      "unknown alternative 'tp' (choose one of: recompute, optimizer, lora, qlora, offload, "
      "allocator, shorter_sequence, sharding, gpu, micro_batch, precision, fused_loss)");
}

}  // namespace
}  // namespace memplan
