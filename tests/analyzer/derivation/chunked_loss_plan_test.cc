// --loss-chunks (analyzer/derivation/chunked_loss_plan.h): torch.chunk's sizes, the head run once
// per chunk, one fp32 cross-entropy term per chunk, and the refusals.
//
// The model (the CLI fixture tests/fixtures/lm_head.onnx is the same graph):
//   x [b, 16, 32] (input) -> MatMul(x, W1 [32, 32]) "proj" -> h [b, 16, 32]
//     -> MatMul(h, W [32, 100]) "lm_head" -> logits [b, 16, 100] -> cross entropy, int64 labels
// pure bf16, SGD. 4 chunks of seq 16 are 4 tokens each: a chunk's logits are b * 4 * 100 = 800
// elements at b = 2 (1600 bytes in bf16, 3200 in fp32).

#include <catch2/catch.hpp>

#include "analyzer/derivation/chunked_loss_plan.h"
#include "analyzer/simulation/simulator.h"
#include "tests/analyzer/derivation/program_test_derive.h"
#include "tests/analyzer/derivation/program_test_graphs.h"
#include "tests/analyzer/derivation/program_test_lookup.h"

namespace memplan {
namespace {

using testing::DeriveVerified;
using testing::Named;
using testing::StepOf;
using testing::TestGraph;

constexpr int64_t kBatch = 2;
constexpr int64_t kChunkElements = kBatch * 4 * 100;  // 800

enum class Head { kMatMul, kTransposedBias, kRelu };

TestGraph LmHead(Head head = Head::kMatMul) {
  TestGraph t;
  const Dim b = t.B();
  ValueId x = t.Input("x", {b, 16, 32});
  ValueId h = t.Op("MatMul", "proj", {x, t.Param("W1", {32, 32})}, "h", {b, 16, 32});
  ValueId logits;
  if (head == Head::kTransposedBias) {
    // nn.Linear(32, 100) as torch.onnx writes it: MatMul(h, Transpose(W [100, 32])) + bias.
    ValueId wt = t.Op("Transpose", "lm_head_t", {t.Param("W", {100, 32})}, "W_t", {32, 100});
    ValueId p = t.Op("MatMul", "lm_head", {h, wt}, "product", {b, 16, 100});
    logits = t.Op("Add", "lm_head_bias", {p, t.Param("bias", {100})}, "logits", {b, 16, 100});
  } else if (head == Head::kRelu) {
    logits = t.Op("Relu", "act", {h}, "logits", {b, 16, 32});
  } else {
    logits = t.Op("MatMul", "lm_head", {h, t.Param("W", {32, 100})}, "logits", {b, 16, 100});
  }
  t.Output(logits);
  return t;
}

ProgramOptions Options() {
  ProgramOptions options;
  options.loss = LossKind::kCrossEntropy;
  options.optimizer = OptimizerKind::kSgd;
  options.precision = Precision::kBf16;
  options.amp_mode = AmpMode::kPure;
  return options;
}

// The graph chunked and the program options its plan gives.
ChunkedLossPlan Chunk(TestGraph& t, ProgramOptions& options, int64_t chunks) {
  options.loss_chunks = chunks;
  Expected<ChunkedLossPlan> plan =
      ApplyChunkedLoss(t.graph, chunks, options.loss, options.loss_outputs, t.Bind(kBatch), "m");
  REQUIRE(plan.ok());
  plan->PlanTerms(options);
  return *plan;
}

int64_t Bytes(const TestGraph& t, const Buffer& b) { return *b.bytes.Evaluate(t.Bind(kBatch)); }

TEST_CASE("chunked loss: torch.chunk's sizes along seq", "[derivation][loss]") {
  CHECK(TorchChunkSizes(128, 8) == std::vector<int64_t>(8, 16));
  // ceil(128 / 3) = 43: 43, 43 and 42 tokens.
  CHECK(TorchChunkSizes(128, 3) == std::vector<int64_t>{43, 43, 42});
  // ceil(10 / 8) = 2: five chunks, not eight (torch.chunk may return fewer).
  CHECK(TorchChunkSizes(10, 8) == std::vector<int64_t>(5, 2));
  CHECK(TorchChunkSizes(16, 1) == std::vector<int64_t>{16});
}

TEST_CASE("chunked loss: the head runs once per chunk, the chunks are the graph outputs",
          "[derivation][loss]") {
  for (Head head : {Head::kMatMul, Head::kTransposedBias}) {
    TestGraph t = LmHead(head);
    ProgramOptions options = Options();
    const ChunkedLossPlan plan = Chunk(t, options, 4);
    CHECK(plan.logits == "logits");
    CHECK(plan.rows == std::vector<int64_t>(4, 4));
    REQUIRE(plan.outputs.size() == 4);
    CHECK(plan.outputs.front() == "logits.chunk0");
    CHECK(options.loss_outputs == plan.outputs);
    REQUIRE(t.graph.outputs().size() == 4);
    for (ValueId o : t.graph.outputs()) {
      const Value& v = t.graph.value(o);
      CHECK(v.shape.dims[1] == Dim(4));
      CHECK(v.shape.dims[2] == Dim(100));
    }
    // One Split of h along seq; the head's MatMul (and bias Add) once per chunk; a Transpose of
    // the weight stays one node, read by every chunk.
    int splits = 0, matmuls = 0, adds = 0, transposes = 0;
    for (const Node& n : t.graph.nodes()) {
      splits += n.op_type == "Split";
      matmuls += n.op_type == "MatMul";
      adds += n.op_type == "Add";
      transposes += n.op_type == "Transpose";
    }
    CHECK(splits == 1);
    CHECK(matmuls == 1 + 4);  // proj + 4 chunks
    CHECK(adds == (head == Head::kTransposedBias ? 4 : 0));
    CHECK(transposes == (head == Head::kTransposedBias ? 1 : 0));
    if (head == Head::kTransposedBias)
      CHECK(t.graph.value(*t.graph.FindValue("W_t")).consumers.size() == 4);
    (void)DeriveVerified(t.graph, options);
  }
}

TEST_CASE("chunked loss: each chunk is upcast on its own and its log-probs freed by its backward",
          "[derivation][loss]") {
  TestGraph t = LmHead();
  ProgramOptions options = Options();
  Chunk(t, options, 4);
  const TrainingProgram p = DeriveVerified(t.graph, options);
  REQUIRE(p.loss_terms.size() == 4);
  for (int k = 0; k < 4; ++k) {
    const std::string chunk = "logits.chunk" + std::to_string(k);
    // torchtune's logits_chunk.float(): 800 fp32 elements, dead after the chunk's loss step.
    const Buffer& cast = Named(p, chunk + ".float32@loss." + chunk);
    CHECK(Bytes(t, cast) == kChunkElements * 4);
    CHECK(testing::FreedAt(p, cast.id) == StepOf(p, StepKind::kLoss, "loss." + chunk));
    // log_softmax's fp32 result, saved, freed when the chunk's loss backward has run.
    const Buffer& log_prob = Named(p, "loss." + chunk + ".log_prob");
    CHECK(log_prob.dtype == DType::kFloat32);
    CHECK(Bytes(t, log_prob) == kChunkElements * 4);
    CHECK(testing::FreedAt(p, log_prob.id) == StepOf(p, StepKind::kLossBackward, "loss." + chunk));
    // The chunk's logits gradient in bf16 (ToCopyBackward of the fp32 one): 1600 bytes.
    const Buffer& grad = Named(p, "grad(" + chunk + ")");
    CHECK(grad.dtype == DType::kBFloat16);
    CHECK(Bytes(t, grad) == kChunkElements * 2);
  }
  // Autograd runs the last chunk's loss backward first (the ready node created last).
  CHECK(StepOf(p, StepKind::kLossBackward, "loss.logits.chunk3") <
        StepOf(p, StepKind::kLossBackward, "loss.logits.chunk0"));
  // The caller holds the list of chunk logits until the loss returns (`del logits` after it):
  // every chunk's bf16 logits live to the last chunk's loss step.
  const LogicalTime last_loss = StepOf(p, StepKind::kLoss, "loss.logits.chunk3");
  for (int k = 0; k < 4; ++k)
    CHECK(testing::FreedAt(p, Named(p, "logits.chunk" + std::to_string(k)).id) == last_loss);
}

TEST_CASE("chunked loss: bad input is an error naming --loss-chunks", "[derivation][loss]") {
  auto refused = [](Head head, LossKind loss, std::vector<std::string> outputs) {
    TestGraph t = LmHead(head);
    Expected<ChunkedLossPlan> plan = ApplyChunkedLoss(t.graph, 8, loss, outputs, t.Bind(2), "m");
    REQUIRE_FALSE(plan.ok());
    return plan.error().message;
  };
  CHECK(refused(Head::kMatMul, LossKind::kMse, {}) ==
        "--loss-chunks chunks a cross-entropy loss (torchtune's CEWithChunkedOutputLoss); the "
        "loss here is mse");
  CHECK(refused(Head::kMatMul, LossKind::kCrossEntropy, {"logits", "h"}) ==
        "--loss-chunks chunks one cross-entropy loss; with several loss outputs drop "
        "--loss-chunks");
  CHECK(refused(Head::kRelu, LossKind::kCrossEntropy, {})
            .find("--loss-chunks: no LM head makes output 'logits' of model 'm'") == 0);
  // Not chunked when not asked: the graph is left as it is.
  TestGraph t = LmHead();
  Expected<ChunkedLossPlan> none =
      ApplyChunkedLoss(t.graph, 0, LossKind::kCrossEntropy, {}, t.Bind(2), "m");
  REQUIRE(none.ok());
  CHECK_FALSE(none->chunked());
  CHECK(t.graph.outputs().size() == 1);
}

}  // namespace
}  // namespace memplan
