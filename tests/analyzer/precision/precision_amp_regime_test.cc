// The three mixed-precision regimes (--amp-mode, analyzer/precision/amp_regime.h) on one small
// graph: where parameters, gradients and optimizer state live, autocast's weight-cast cache and
// its gradient casts. Every byte count is derived by hand in the comments.

#include <catch2/catch.hpp>

#include "analyzer/derivation/program_derivation.h"
#include "analyzer/precision/model_state_bytes.h"
#include "analyzer/simulation/exact_allocator.h"
#include "analyzer/simulation/simulator.h"
#include "tests/analyzer/derivation/program_test_derive.h"
#include "tests/analyzer/derivation/program_test_graphs.h"
#include "tests/analyzer/derivation/program_test_lookup.h"

namespace memplan {
namespace {

using testing::BytesPerSample;
using testing::Find;
using testing::FreedAt;
using testing::Named;
using testing::StepOf;
using testing::TestGraph;

// x [B,8] fp32 input, W1 [8,4] (32 elements), W2 [4,2] (8 elements), sum loss, Adam:
//   mm1  = MatMul(x, W1) -> h [B,4]   fp16-safe; x needs no gradient, so mm1 saves only x
//   relu = Relu(h)       -> r [B,4]   follows its input
//   mm2  = MatMul(r, W2) -> y [B,2]   fp16-safe; saves r (for dW2) and W2 (for dr)
TestGraph TwoLayerGraph() { return testing::TwoLayerMlp(8, 4, 2); }

TrainingProgram Derive(const TestGraph& t, Precision precision, AmpMode mode) {
  ProgramOptions options;
  options.loss = LossKind::kSum;
  options.optimizer = OptimizerKind::kAdam;
  options.precision = precision;
  options.amp_mode = mode;
  return testing::DeriveVerified(t.graph, options);
}

ModelStateBytes StateOf(const TestGraph& t, const TrainingProgram& program) {
  ExactAllocator exact;
  auto result = Simulate(program, t.Bind(1), exact);
  REQUIRE(result.ok());
  return ModelStateBytesOf(program, result->buffer_bytes);
}

TEST_CASE("each AMP regime keeps its parameters, gradients and optimizer state", "[precision]") {
  const TestGraph t = TwoLayerGraph();
  // 40 parameters in all (32 + 8).
  SECTION("autocast: fp32 parameters, fp32 gradients, fp32 Adam state, no master") {
    const TrainingProgram p = Derive(t, Precision::kFp16, AmpMode::kAutocast);
    const ModelStateBytes s = StateOf(t, p);
    CHECK(s.parameters == 160);               // 40 x 4
    CHECK(s.master_weights == 0);             // the parameters are the fp32 copy
    CHECK(s.gradients == 160);                // 40 x 4
    CHECK(s.optimizer_state == 320);          // 2 states x 40 x 4
    CHECK(Find(p, "W1.float16") == nullptr);  // no persistent working copy
    CHECK(Named(p, "grad(W1)").dtype == DType::kFloat32);
  }
  SECTION("master weights: half parameters and gradients beside fp32 masters") {
    const TrainingProgram p = Derive(t, Precision::kFp16, AmpMode::kMasterWeights);
    const ModelStateBytes s = StateOf(t, p);
    CHECK(s.parameters == 80);        // working copies: 40 x 2
    CHECK(s.master_weights == 160);   // masters: 40 x 4
    CHECK(s.gradients == 80);         // 40 x 2
    CHECK(s.optimizer_state == 320);  // 2 x 40 x 4: ZeRO's 2 + 2 + 4 + 4 + 4 = 16 B/parameter
    CHECK(Named(p, "W1.float16").persistent);
  }
  SECTION("pure bf16: bf16 parameters, gradients and optimizer state") {
    const TrainingProgram p = Derive(t, Precision::kBf16, AmpMode::kPure);
    const ModelStateBytes s = StateOf(t, p);
    CHECK(s.parameters == 80);  // 40 x 2
    CHECK(s.master_weights == 0);
    CHECK(s.gradients == 80);         // 40 x 2
    CHECK(s.optimizer_state == 160);  // 2 x 40 x 2: 8 B per Adam parameter in all
    CHECK(Named(p, "adam.exp_avg(W1)").dtype == DType::kBFloat16);
    // No autocast: every op runs in bf16; only the fp32 graph input is cast (16 B per sample).
    // The loss runs on the bf16 output as stored (a pure loop's loss; HF's logits.float() shows
    // in the graph or takes --loss-dtype fp32: analyzer/precision/loss_precision.h).
    CHECK(BytesPerSample(t, Named(p, "x.bfloat16@mm1")) == 16);
    CHECK(Find(p, "y.float32@loss") == nullptr);
  }
  SECTION("fp32 ignores the mode") {
    const TrainingProgram p = Derive(t, Precision::kFp32, AmpMode::kAutocast);
    const ModelStateBytes s = StateOf(t, p);
    CHECK(s.parameters == 160);
    CHECK(s.gradients == 160);
    CHECK(s.optimizer_state == 320);
  }
}

TEST_CASE("autocast casts each weight once per forward and frees it when the context exits",
          "[precision]") {
  const TestGraph t = TwoLayerGraph();
  const TrainingProgram p = Derive(t, Precision::kFp16, AmpMode::kAutocast);
  const LogicalTime loss = p.loss_step;
  // W1's cast (32 x 2 = 64 B) is not saved (x needs no gradient): autocast's cache keeps it to
  // the end of the autocast context, i.e. the loss step, not just to its reader mm1.
  const Buffer& w1 = Named(p, "W1.float16@mm1");
  CHECK(w1.role == BufferRole::kCast);
  CHECK(BytesPerSample(t, w1) == 64);
  CHECK(FreedAt(p, w1.id) == loss);
  CHECK_FALSE(w1.held_for_backward);
  // W2's cast (8 x 2 = 16 B) is saved by mm2 for r's gradient: freed after mm2's backward.
  const Buffer& w2 = Named(p, "W2.float16@mm2");
  CHECK(BytesPerSample(t, w2) == 16);
  CHECK(w2.held_for_backward);
  CHECK(FreedAt(p, w2.id) == StepOf(p, StepKind::kBackward, "mm2"));
  // The backward writes dW1 in fp16 (64 B), autograd's ToCopyBackward casts it to fp32 (128 B):
  // both live during the cast, then the fp32 part becomes grad(W1) (AccumulateGrad's steal).
  const Buffer& half = Named(p, "grad(W1)@mm1");
  CHECK(half.dtype == DType::kFloat16);
  CHECK(BytesPerSample(t, half) == 64);
  const Buffer& full = Named(p, "grad(W1)@mm1.float32");
  CHECK(BytesPerSample(t, full) == 128);
  const LogicalTime cast = StepOf(p, StepKind::kCastGradient, "cast(grad(W1)@mm1)");
  CHECK(FreedAt(p, half.id) == cast);
  CHECK(p.step(cast + 1).kind == StepKind::kAccumulateGradient);
  CHECK(p.step(cast + 1).accumulate_part == full.id);
}

TEST_CASE("autocast shares one weight cast between the readers of a forward", "[precision]") {
  // W [4,4] read by two fp16 MatMuls: the cache holds one cast (16 x 2 = 32 B), made by the
  // first reader and read by the second.
  TestGraph t;
  ValueId x = t.Input("x", {t.B(), 4});
  ValueId w = t.Param("W", {4, 4});
  ValueId a = t.Op("MatMul", "mm_a", {x, w}, "a", {t.B(), 4});
  ValueId b = t.Op("MatMul", "mm_b", {a, w}, "b", {t.B(), 4});
  t.Output(b);
  const TrainingProgram p = Derive(t, Precision::kFp16, AmpMode::kAutocast);
  CHECK(BytesPerSample(t, Named(p, "W.float16@mm_a")) == 32);
  CHECK(Find(p, "W.float16@mm_b") == nullptr);
  // mm_b saves the cast (for a's gradient): it lives to mm_b's backward.
  CHECK(FreedAt(p, Named(p, "W.float16@mm_a").id) == StepOf(p, StepKind::kBackward, "mm_b"));
}

TEST_CASE("under autocast an embedding lookup on an fp32 weight runs in fp32", "[precision]") {
  // Gather reads no floating activation: under master weights it reads the working copy (fp16),
  // under autocast the fp32 parameter itself (embedding is on no autocast list).
  TestGraph t;
  ValueId ids = t.Input("ids", {t.B(), 3}, DType::kInt64);
  ValueId table = t.Param("E", {10, 4});
  ValueId e = t.Op("Gather", "embed", {table, ids}, "e", {t.B(), 3, 4});
  t.Output(t.Op("Relu", "act", {e}, "r", {t.B(), 3, 4}));
  const TrainingProgram autocast = Derive(t, Precision::kFp16, AmpMode::kAutocast);
  CHECK(Named(autocast, "e").dtype == DType::kFloat32);
  const TrainingProgram master = Derive(t, Precision::kFp16, AmpMode::kMasterWeights);
  CHECK(Named(master, "e").dtype == DType::kFloat16);
}

}  // namespace
}  // namespace memplan
