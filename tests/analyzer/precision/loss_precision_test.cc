// Where the loss lives and in which dtype (--loss-dtype, --loss-chunks;
// analyzer/precision/loss_precision.h), on the LM head of fused_loss_plan_test.cc:
//   x [b, 16, 32] (input) -> MatMul(x, W1 [32, 32]) "proj" -> h -> MatMul(h, W [32, 100])
//   "lm_head" -> logits [b, 16, 100] -> cross entropy against int64 labels, SGD.
// At b = 2 the loss's [tokens, vocab] tensors have E = 2 * 16 * 100 = 3200 elements: 6400 bytes
// in bf16, 12800 in fp32. PyTorch's cross entropy allocates three of them in the dtype it
// computes in (log_softmax's saved result, nll_loss_backward's log-prob gradient,
// _log_softmax_backward_data's logits gradient); every byte count below follows from that.

#include <catch2/catch.hpp>

#include "analyzer/derivation/program_derivation.h"
#include "analyzer/precision/loss_precision.h"
#include "analyzer/simulation/simulator.h"
#include "tests/analyzer/derivation/program_test_derive.h"
#include "tests/analyzer/derivation/program_test_graphs.h"
#include "tests/analyzer/derivation/program_test_lookup.h"

namespace memplan {
namespace {

using testing::DeriveVerified;
using testing::Find;
using testing::Named;
using testing::SimulateExactly;
using testing::TestGraph;

constexpr int64_t kBatch = 2;
constexpr int64_t kElements = kBatch * 16 * 100;  // E = 3200

TestGraph LmHead(bool cast_to_float = false) {
  TestGraph t;
  const Dim b = t.B();
  ValueId x = t.Input("x", {b, 16, 32});
  ValueId h = t.Op("MatMul", "proj", {x, t.Param("W1", {32, 32})}, "h", {b, 16, 32});
  ValueId logits = t.Op("MatMul", "lm_head", {h, t.Param("W", {32, 100})},
                        cast_to_float ? "lm" : "logits", {b, 16, 100});
  if (cast_to_float) {
    // HF's logits.float() as a bf16 export writes it: Cast(to = FLOAT).
    logits = t.Op("Cast", "upcast", {logits}, "logits", {b, 16, 100});
    t.graph.mutable_node(t.NodeNamed("upcast")).attributes.Set("to", int64_t{1});
  }
  t.Output(logits);
  return t;
}

ProgramOptions Options(Precision precision, AmpMode mode) {
  ProgramOptions options;
  options.loss = LossKind::kCrossEntropy;
  options.optimizer = OptimizerKind::kSgd;
  options.precision = precision;
  options.amp_mode = mode;
  return options;
}

int64_t Bytes(const TestGraph& t, const Buffer& b) { return *b.bytes.Evaluate(t.Bind(kBatch)); }

int64_t Peak(const TestGraph& t, const TrainingProgram& p) {
  return SimulateExactly(p, t.Bind(kBatch)).peak_bytes;
}

TEST_CASE("the auto loss dtype follows the regime", "[precision][loss]") {
  const AmpCategory fp32 = AmpCategory::kFp32Required;
  CHECK(AutoLossDType(RegimeOf(Precision::kFp32, AmpMode::kAutocast), fp32, DType::kFloat32) ==
        DType::kUndefined);
  CHECK(AutoLossDType(RegimeOf(Precision::kBf16, AmpMode::kAutocast), fp32, DType::kBFloat16) ==
        DType::kFloat32);
  CHECK(AutoLossDType(RegimeOf(Precision::kFp16, AmpMode::kMasterWeights), fp32, DType::kFloat16) ==
        DType::kFloat32);
  // Pure: the logits as stored (kUndefined: no cast).
  CHECK(AutoLossDType(RegimeOf(Precision::kBf16, AmpMode::kPure), fp32, DType::kBFloat16) ==
        DType::kUndefined);
  // An override wins; a chunked loss upcasts each chunk (torchtune).
  const AmpRegime pure = RegimeOf(Precision::kBf16, AmpMode::kPure);
  CHECK(LossComputeDType(LossDType::kFp32, 0, pure, fp32, DType::kBFloat16) == DType::kFloat32);
  CHECK(LossComputeDType(LossDType::kAuto, 8, pure, fp32, DType::kBFloat16) == DType::kFloat32);
  CHECK(LossComputeDType(LossDType::kBf16, 8, pure, fp32, DType::kBFloat16) == DType::kBFloat16);
}

TEST_CASE("pure bf16 keeps the cross entropy's three [tokens, vocab] tensors in bf16",
          "[precision][loss]") {
  const TestGraph t = LmHead();
  const TrainingProgram p = DeriveVerified(t.graph, Options(Precision::kBf16, AmpMode::kPure));
  // No fp32 copy of the logits; log_softmax's result in the logits' dtype: E x 2 = 6400.
  CHECK(Find(p, "logits.float32@loss") == nullptr);
  const Buffer& log_prob = Named(p, "loss.log_prob");
  CHECK(log_prob.dtype == DType::kBFloat16);
  CHECK(Bytes(t, log_prob) == kElements * 2);
  // nll_loss_backward's log-prob gradient is the loss backward's workspace (E x 2), and the
  // logits' gradient is written in bf16 directly (no fp32 part cast after).
  const Step& backward =
      p.steps[static_cast<size_t>(testing::StepOf(p, StepKind::kLossBackward, "loss"))];
  CHECK(Bytes(t, p.buffer(backward.workspace)) == kElements * 2);
  CHECK(p.buffer(backward.input_gradients[0].target).dtype == DType::kBFloat16);
  CHECK(Find(p, "grad(logits)@loss.float32") == nullptr);
}

TEST_CASE("flag --loss-dtype fp32 upcasts as HF's logits.float(): three fp32 tensors",
          "[precision][loss]") {
  const TestGraph t = LmHead();
  ProgramOptions options = Options(Precision::kBf16, AmpMode::kPure);
  const TrainingProgram bf16 = DeriveVerified(t.graph, options);
  options.loss_dtype = LossDType::kFp32;
  const TrainingProgram fp32 = DeriveVerified(t.graph, options);
  CHECK(Bytes(t, Named(fp32, "logits.float32@loss")) == kElements * 4);
  CHECK(Named(fp32, "loss.log_prob").dtype == DType::kFloat32);
  // Both peak at the loss's backward: log-probs, their gradient and the logits' gradient are
  // live together (the fp32 copy of the logits and the bf16 logits are freed after the forward
  // loss: neither is saved). Everything else is the same, so the peaks differ by
  // 3 x E x (4 - 2) = 3 x 3200 x 2 = 19200 bytes.
  CHECK(Peak(t, fp32) - Peak(t, bf16) == 3 * kElements * 2);
}

TEST_CASE("a Cast to float before the output makes the pure loss fp32 without a flag",
          "[precision][loss]") {
  const TestGraph t = LmHead(/*cast_to_float=*/true);
  const TrainingProgram p = DeriveVerified(t.graph, Options(Precision::kBf16, AmpMode::kPure));
  // The graph's Cast made the fp32 logits; the loss reads them as they are.
  CHECK(Find(p, "logits.float32@loss") == nullptr);
  CHECK(Named(p, "loss.log_prob").dtype == DType::kFloat32);
  CHECK(Bytes(t, Named(p, "loss.log_prob")) == kElements * 4);
}

TEST_CASE("autocast computes the loss in fp32 from a cast of the half logits",
          "[precision][loss]") {
  const TestGraph t = LmHead();
  const TrainingProgram p = DeriveVerified(t.graph, Options(Precision::kBf16, AmpMode::kAutocast));
  CHECK(Bytes(t, Named(p, "logits.float32@loss")) == kElements * 4);
  CHECK(Named(p, "loss.log_prob").dtype == DType::kFloat32);
}

// --loss-chunks chunks the head and the loss in the graph: tests/analyzer/derivation/
// chunked_loss_plan_test.cc derives its buffers.

TEST_CASE("flag --loss-chunks needs cross entropy on [batch, seq, vocab] with a known seq",
          "[precision][loss]") {
  const TestGraph t = LmHead();
  ProgramOptions options = Options(Precision::kBf16, AmpMode::kPure);
  options.loss_chunks = 8;
  options.loss = LossKind::kSum;
  auto refused = DeriveTrainingProgram(t.graph, options);
  REQUIRE_FALSE(refused.ok());
  CHECK(refused.error().message ==
        "--loss-chunks chunks a cross-entropy loss (torchtune's CEWithChunkedOutputLoss); the "
        "loss here is sum");
}

}  // namespace
}  // namespace memplan
