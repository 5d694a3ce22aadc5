#include "analyzer/vocabulary/offload_hooks.h"

#include "name_table_checks.h"

namespace memplan {
namespace {

TEST_CASE("offload hooks names round-trip, unknown ones list the choices", "[vocabulary]") {
  vocabulary_test::CheckRoundTrip(kOffloadHooksNames, ParseOffloadHooks);
  vocabulary_test::CheckParseError(
      ParseOffloadHooks, "deepspeed",
      "unknown offload hooks 'deepspeed' (choose one of: save-on-cpu, torchtune, "
      "torchtune-streams, unsloth)");
  CHECK_FALSE(IsTorchtuneHooks(OffloadHooks::kSaveOnCpu));
  CHECK(IsTorchtuneHooks(OffloadHooks::kTorchtune));
  CHECK(IsTorchtuneHooks(OffloadHooks::kTorchtuneStreams));
  CHECK_FALSE(IsTorchtuneHooks(OffloadHooks::kUnsloth));
}

}  // namespace
}  // namespace memplan
