// Buffer sizes from user-controlled dims (an input dim of 10^12, a batch near 2^60) must come back
// as an error from the simulator, never as a wrapped int64 sum.

#include <catch2/catch.hpp>

#include "analyzer/derivation/program_derivation.h"
#include "analyzer/simulation/exact_allocator.h"
#include "analyzer/simulation/simulator.h"
#include "tests/analyzer/derivation/program_test_graphs.h"

namespace memplan {
namespace {

using Catch::Matchers::Contains;
using testing::TestGraph;

TEST_CASE("buffers whose total passes 2^62 bytes are an error", "[simulator][bad-input]") {
  // x[B, 1] -> Relu -> r[B, 1], float32: each of x and r is 4B bytes. With B = 2^59 each is
  // 2^61 bytes and fits, but x + r = 2^62 plus the loss's label and gradients passes 2^62.
  // (At B = 2^60 the 8-byte label alone overflows while its size is evaluated.)
  TestGraph t;
  ValueId x = t.Input("x", {t.B(), 1});
  t.Output(t.Op("Relu", "relu", {x}, "r", {t.B(), 1}));
  auto program = DeriveTrainingProgram(t.graph, ProgramOptions{});
  REQUIRE(program.ok());
  ExactAllocator exact;
  auto huge = Simulate(*program, t.Bind(int64_t{1} << 59), exact, SimulationOptions{});
  REQUIRE_FALSE(huge.ok());
  CHECK_THAT(huge.error().message, Contains("buffers total more than 2^62 bytes"));

  // B = 10^12 (the input dim): 4 * 10^12 bytes per buffer is large but representable.
  ExactAllocator exact_again;
  CHECK(Simulate(*program, t.Bind(1'000'000'000'000), exact_again, SimulationOptions{}).ok());
}

}  // namespace
}  // namespace memplan
