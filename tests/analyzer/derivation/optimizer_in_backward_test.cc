// --optimizer-in-backward (torchtune's optimizer_in_bwd): each parameter is stepped and its
// gradient freed by a post-accumulate-grad hook, so the full gradient set never exists.
//
// The model (program_test_graphs.h TwoLayerMlp(64, 128, 32)), fp32, Adam (fused: no step
// intermediates), sum loss, b = 1, second iteration (states live throughout):
//   x [1, 64] -> mm1 (W1 [64, 128], 32768 B) -> h -> relu -> r -> mm2 (W2 [128, 32], 16384 B) -> y
//   P (parameters) = 49152, S (Adam's two moments) = 98304; x 256, h, r 512 each, y 128.
// Backward runs mm2 (writes grad(W2) 16384 and grad(r) 512), relu (grad(h) 512), mm1 (writes
// grad(W1) 32768; x needs no gradient). At mm1's backward:
//   after backward  P + S + grad(W2) 16384 + grad(W1) 32768 + x 256 + grad(h) 512
//   in backward     W2 was stepped after its accumulation and grad(W2) freed: 16384 fewer.
// Both peak there (the optimizer phase after backward holds P + S + 49152, 768 bytes less), so
// the peaks differ by exactly grad(W2) = 128 * 32 * 4 = 16384 bytes.

#include <catch2/catch.hpp>

#include "analyzer/derivation/program_derivation.h"
#include "analyzer/simulation/simulator.h"
#include "tests/analyzer/derivation/program_test_derive.h"
#include "tests/analyzer/derivation/program_test_graphs.h"
#include "tests/analyzer/derivation/program_test_lookup.h"

namespace memplan {
namespace {

using testing::DeriveVerified;
using testing::Named;
using testing::SimulateExactly;
using testing::StepOf;
using testing::TestGraph;

ProgramOptions Options(bool in_backward) {
  ProgramOptions options;
  options.loss = LossKind::kSum;
  options.optimizer = OptimizerKind::kAdam;
  options.optimizer_in_backward = in_backward;
  return options;
}

TEST_CASE("the optimizer steps each parameter inside backward and frees its gradient",
          "[program][optimizer]") {
  const TestGraph t = testing::TwoLayerMlp(64, 128, 32);
  const TrainingProgram after = DeriveVerified(t.graph, Options(false));
  const TrainingProgram in = DeriveVerified(t.graph, Options(true));
  const int64_t peak_after = SimulateExactly(after, t.Bind(1)).peak_bytes;
  const int64_t peak_in = SimulateExactly(in, t.Bind(1)).peak_bytes;
  CHECK(peak_after - peak_in == 128 * 32 * 4);

  // W2's step runs right after its accumulation, before mm1's backward, and frees grad(W2).
  const LogicalTime w2_step = StepOf(in, StepKind::kOptimizerStep, "adam(W2)");
  const LogicalTime w1_step = StepOf(in, StepKind::kOptimizerStep, "adam(W1)");
  CHECK(w2_step < StepOf(in, StepKind::kBackward, "mm1"));
  CHECK(w1_step > StepOf(in, StepKind::kBackward, "mm1"));
  CHECK(in.micro_batch.contains(w2_step));
  CHECK(in.micro_batch.contains(w1_step));
  CHECK(testing::FreedAt(in, Named(in, "grad(W2)").id) == w2_step);
  const Step& step = in.steps[static_cast<size_t>(w2_step)];
  CHECK(step.parameter >= 0);
  CHECK(in.parameters[static_cast<size_t>(step.parameter)].value == Named(in, "grad(W2)").value);
  // Nothing is left for the optimizer phase.
  CHECK(in.optimizer.size() == 0);
}

TEST_CASE("optimizer in backward refuses what needs every gradient at once",
          "[program][optimizer]") {
  const TestGraph t = testing::TwoLayerMlp(64, 128, 32);
  ProgramOptions options = Options(true);
  SECTION("accumulation") {
    options.accumulation_steps = 4;
    auto refused = DeriveTrainingProgram(t.graph, options);
    REQUIRE_FALSE(refused.ok());
    CHECK(refused.error().message ==
          "--optimizer-in-backward steps each parameter as soon as its gradient is accumulated, "
          "so gradients cannot accumulate over micro-batches (torchtune refuses "
          "gradient_accumulation_steps > 1 with optimizer_in_bwd); got 4 accumulation steps");
  }
  SECTION("clipping") {
    options.clip_gradients = true;
    auto refused = DeriveTrainingProgram(t.graph, options);
    REQUIRE_FALSE(refused.ok());
    CHECK(refused.error().message.find("--clip-grad") != std::string::npos);
  }
  SECTION("loss scaling") {
    options.precision = Precision::kFp16;  // dynamic loss scaling by default
    auto refused = DeriveTrainingProgram(t.graph, options);
    REQUIRE_FALSE(refused.ok());
    CHECK(refused.error().message.find("loss scaling") != std::string::npos);
  }
}

}  // namespace
}  // namespace memplan
