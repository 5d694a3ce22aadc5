// --fused-loss: which LM heads are fused into memplan:FusedLinearCrossEntropy, Liger's chunk rule,
// and the bytes the training program keeps and peaks at, derived by hand.
//
// The model (the CLI fixture tests/fixtures/lm_head.onnx is the same graph):
//   x [b, 16, 32] (input) -> MatMul(x, W1 [32, 32]) "proj" -> h [b, 16, 32]
//     -> MatMul(h, W [32, 100]) "lm_head" -> logits [b, 16, 100] -> cross entropy, int64 labels
// fp32 throughout, plain SGD (no optimizer state). BT = 16b rows, H = 32, V = 100.
//   |x| = |h| = 16*32*4 b = 2048b bytes;  |logits| = 16*100*4 b = 6400b;  labels 16*8 b = 128b
//   W1 = 32*32*4 = 4096, W = 32*100*4 = 12800: parameters 16896 bytes.
//
// Saved for backward (bytes held from forward into backward, sampled at the loss step):
//   unfused: proj keeps x (for W1's gradient; x needs none, so W1 is not kept), lm_head keeps h
//   (for W's gradient; W itself is a parameter, not an activation), the cross entropy keeps its
//   fp32 log-probabilities [b, 16, 100] and the labels:
//     2048b + 2048b + 6400b + 128b = 10624b  -> b=2: 21248, b=4: 42496
//   fused: proj keeps x; the fused node keeps grad_input [b, 16, 32] and grad_weight [100, 32],
//   both fp32, computed in forward. h, the labels and the logits are gone (the labels are read in
//   forward only; Liger's mean reduction saves no target):
//     2048b + 2048b + 12800 -> b=2: 20992, b=4: 29184
//
// Peak (exact allocator, every live byte; see each test for the step):
//   unfused, b=2, at the loss's backward: torch's nll_loss_backward writes the log-probs'
//     gradient, then _log_softmax_backward_data the logits' gradient while that is live:
//     parameters 16896 + x 4096 + labels 256 + h 4096 + log-probs 12800 + their gradient 12800
//     + grad(logits) 12800 = 63744 (lm_head's backward after it: 54784 and the loss scalars).
//   fused, b=2, at the fused forward: parameters 16896 + x 4096 + labels 256 + h 4096 + the loss
//     4 + grad_input 4096 + grad_weight 12800 + forward workspace: the logits tile 8 rows
//     (cdiv(32, cdiv(100, 32) = 4) = 8, a power of two) * 100 * 4 = 3200, loss_1d 32*4 = 128,
//     target_mask 32, torch.mm's [100, 32] fp32 product 12800 = 16160 -> 58404.
//   In this tiny model the [V, H] product outweighs the [b, 16, 100] logits it replaces, so the
//   fused peak is higher at b=2; Liger's saving grows with the batch (see the b=8 case).

#include <catch2/catch.hpp>

#include "analyzer/derivation/fused_loss_plan.h"
#include "analyzer/simulation/exact_allocator.h"
#include "analyzer/simulation/simulator.h"
#include "graph/ops/fused_loss_op.h"
#include "graph/ops/op_registry.h"
#include "tests/analyzer/derivation/program_test_derive.h"
#include "tests/analyzer/derivation/program_test_graphs.h"

namespace memplan {
namespace {

using testing::DeriveVerified;
using testing::TestGraph;

constexpr int64_t kSeq = 16, kHidden = 32, kVocab = 100;

enum class Head { kMatMul, kTransposed, kMatMulAdd, kGemm };

TestGraph LmHead(Head head = Head::kMatMul) {
  TestGraph t;
  const Dim b = t.B();
  if (head == Head::kGemm) {
    // nn.Linear on [b, H]: Gemm(h, W [V, H], bias), transB = 1.
    ValueId x = t.Input("x", {b, kHidden});
    ValueId h = t.Op("MatMul", "proj", {x, t.Param("W1", {kHidden, kHidden})}, "h", {b, kHidden});
    ValueId logits =
        t.Op("Gemm", "lm_head", {h, t.Param("W", {kVocab, kHidden}), t.Param("bias", {kVocab})},
             "logits", {b, kVocab});
    t.graph.mutable_node(t.NodeNamed("lm_head")).attributes.Set("transB", int64_t{1});
    t.Output(logits);
    return t;
  }
  ValueId x = t.Input("x", {b, kSeq, kHidden});
  ValueId h =
      t.Op("MatMul", "proj", {x, t.Param("W1", {kHidden, kHidden})}, "h", {b, kSeq, kHidden});
  ValueId logits;
  switch (head) {
    case Head::kMatMul:
      logits = t.Op("MatMul", "lm_head", {h, t.Param("W", {kHidden, kVocab})}, "logits",
                    {b, kSeq, kVocab});
      break;
    case Head::kTransposed: {
      ValueId wt = t.Op("Transpose", "lm_head_t", {t.Param("wte", {kVocab, kHidden})}, "wte_t",
                        {kHidden, kVocab});
      logits = t.Op("MatMul", "lm_head", {h, wt}, "logits", {b, kSeq, kVocab});
      break;
    }
    case Head::kMatMulAdd: {
      ValueId mm = t.Op("MatMul", "lm_head", {h, t.Param("W", {kHidden, kVocab})}, "product",
                        {b, kSeq, kVocab});
      logits =
          t.Op("Add", "lm_head_bias", {mm, t.Param("bias", {kVocab})}, "logits", {b, kSeq, kVocab});
      break;
    }
    case Head::kGemm:
      break;
  }
  t.Output(logits);
  return t;
}

ProgramOptions CrossEntropySgd(const FusedLossPlan& plan) {
  ProgramOptions options;
  options.loss = plan.ProgramLoss(LossKind::kCrossEntropy);
  options.optimizer = OptimizerKind::kSgd;
  return options;
}

struct Measured {
  int64_t saved = 0;
  int64_t peak = 0;
};

Measured Simulated(const TestGraph& t, const FusedLossPlan& plan, int64_t b) {
  TrainingProgram program = DeriveVerified(t.graph, CrossEntropySgd(plan));
  ExactAllocator exact;
  auto r = Simulate(program, t.Bind(b), exact);
  REQUIRE(r.ok());
  return {r->saved_activation_bytes, r->peak_bytes};
}

FusedLossPlan Apply(TestGraph& t, bool fused) {
  auto plan =
      ApplyFusedLoss(t.graph, fused, LossKind::kAuto, Bindings(&t.graph.symbols()), "lm_head.onnx");
  REQUIRE(plan.ok());
  return std::move(plan).value();
}

TEST_CASE("Liger's chunk rows round cdiv(BT, cdiv(V, H)) up to a power of two", "[fused_loss]") {
  // inc = cdiv(100, 32) = 4.
  CHECK(fused_loss::ChunkRows(32, 32, 100) == 8);   // cdiv(32, 4) = 8, a power of two
  CHECK(fused_loss::ChunkRows(48, 32, 100) == 16);  // cdiv(48, 4) = 12 -> 16
  CHECK(fused_loss::ChunkRows(3, 32, 100) == 1);    // cdiv(3, 4) = 1
  // Liger's own example (fused_linear_cross_entropy.py): BT = 4096*4, V = 32000, H = 4096:
  // inc = 8, chunk 2048.
  CHECK(fused_loss::ChunkRows(4096 * 4, 4096, 32000) == 2048);
  // GPT-2 small at b = 3, seq 1024: inc = cdiv(50257, 768) = 66, cdiv(3072, 66) = 47 -> 64.
  CHECK(fused_loss::ChunkRows(3072, 768, 50257) == 64);
  // V <= H: inc = 1, the chunk is BT's next power of two, capped at BT (the first chunk's rows).
  CHECK(fused_loss::ChunkRows(5, 64, 10) == 5);  // next_power_of_2(5) = 8 > 5
}

TEST_CASE("fused loss replaces MatMul(h, W) and keeps the gradients instead of the logits",
          "[fused_loss]") {
  TestGraph unfused = LmHead();
  const FusedLossPlan none = Apply(unfused, false);
  CHECK_FALSE(none.fused());
  TestGraph fused = LmHead();
  const FusedLossPlan plan = Apply(fused, true);
  REQUIRE(plan.fused());
  CHECK(plan.head == "MatMul");
  CHECK(plan.weight == "W");
  CHECK(plan.replaced == std::vector<std::string>{"lm_head"});
  CHECK(plan.hidden == kHidden);
  CHECK(plan.vocab == kVocab);
  CHECK_FALSE(fused.graph.FindNode("lm_head").has_value());
  const NodeId node = *fused.graph.FindNode(plan.node);
  CHECK(fused.graph.node(node).op_type == fused_loss::kOpType);
  CHECK(fused.graph.value(fused.graph.outputs().front()).shape.rank() == 0);
  // The labels became an input: [b, 16] int64.
  const Value& labels = fused.graph.value(fused.graph.inputs().back());
  CHECK(labels.dtype == DType::kInt64);
  CHECK(labels.shape.rank() == 2);

  // Saved (file comment): unfused 10624b, fused 4096b + 12800.
  CHECK(Simulated(unfused, none, 2).saved == 21248);
  CHECK(Simulated(fused, plan, 2).saved == 20992);
  CHECK(Simulated(unfused, none, 4).saved == 42496);
  CHECK(Simulated(fused, plan, 4).saved == 29184);
  // Chunk rows at b = 2 (BT 32) and b = 3 (BT 48, where the power of two matters).
  CHECK(plan.ChunkRowsAt(fused.Bind(2)) == 8);
  CHECK(plan.ChunkRowsAt(fused.Bind(3)) == 16);
}

TEST_CASE("fused loss peaks at its forward, with the V x H product and the logits tile",
          "[fused_loss]") {
  TestGraph unfused = LmHead();
  const FusedLossPlan none = Apply(unfused, false);
  TestGraph fused = LmHead();
  const FusedLossPlan plan = Apply(fused, true);
  // b = 2, file comment: 58404 fused at the fused forward.
  CHECK(Simulated(fused, plan, 2).peak == 58404);
  // b = 8 (BT 128, tile cdiv(128, 4) = 32 rows, a power of two):
  //   fused forward: 16896 + x 16384 + labels 1024 + h 16384 + loss 4 + grad_input 16384
  //     + grad_weight 12800 + tile 32*100*4 = 12800 + loss_1d 512 + mask 128 + product 12800
  //     = 106116;
  //   unfused, at the loss's backward (file comment): 16896 + x 16384 + labels 1024 + h 16384
  //     + log-probabilities 51200 + their gradient 51200 + grad(logits) 51200 = 204288 (the
  //     loss step before it, logits and log-probabilities both live: 153092).
  CHECK(Simulated(fused, plan, 8).peak == 106116);
  CHECK(Simulated(unfused, none, 8).peak == 204288);
  CHECK(Simulated(unfused, none, 2).peak == 63744);
}

TEST_CASE("the fused op's registry entry: saved gradients, forward workspace, FLOPs",
          "[fused_loss]") {
  TestGraph t = LmHead();
  const FusedLossPlan plan = Apply(t, true);
  REQUIRE(plan.fused());
  const NodeId node = *t.graph.FindNode(plan.node);
  const OpSchema* schema = OpRegistry::Get().Find(fused_loss::kOpType, fused_loss::kDomain);
  REQUIRE(schema != nullptr);
  const OpContext ctx = MakeOpContext(t.graph, node);
  const Bindings b2 = t.Bind(2);
  // Saved: grad_input [b, 16, 32] fp32 and grad_weight [32, 100] fp32 (the weight's layout).
  const std::vector<SavedTensor> saved = schema->saved_for_backward(ctx);
  REQUIRE(saved.size() == 2);
  CHECK(saved[0].name == fused_loss::kGradInput);
  CHECK(TensorBytes(saved[0].shape.NumElements(), saved[0].dtype).Evaluate(b2).value() == 4096);
  CHECK(saved[1].name == fused_loss::kGradWeight);
  CHECK(TensorBytes(saved[1].shape.NumElements(), saved[1].dtype).Evaluate(b2).value() == 12800);
  // Backward returns them: input 0 and the weight (input 1) from the saved tensors.
  CHECK(schema->gradients_from_saved.size() == 3);
  CHECK(schema->gradient_inputs(ctx) == std::vector<bool>{true, true, false});
  // Forward workspace at b = 2: tile 8 * 100 * 4 = 3200 (4 rows per sample: the rewrite's
  // tile_rows_per_sample = cdiv(16, 4)), loss_1d 128, target_mask 32, [100, 32] product 12800.
  CHECK(schema->forward_workspace(ctx).Evaluate(b2).value() == 3200 + 128 + 32 + 12800);
  // FLOPs: 6 * BT * H * V + 5 * BT * V = 6 * 32 * 32 * 100 + 5 * 32 * 100 = 614400 + 16000.
  CHECK(schema->cost(ctx).flops.Evaluate(b2).value() == 630400);
  CHECK(schema->backward_flops_factor == 0.0);
}

TEST_CASE("fused loss recognises the tied, biased and Gemm heads", "[fused_loss]") {
  {
    TestGraph t = LmHead(Head::kTransposed);
    const FusedLossPlan plan = Apply(t, true);
    REQUIRE(plan.fused());
    CHECK(plan.head == "MatMul(Transpose)");
    CHECK(plan.weight == "wte");
    CHECK(plan.replaced == std::vector<std::string>{"lm_head_t", "lm_head"});
    CHECK(plan.vocab == kVocab);
    // Saved as for MatMul(h, W): the weight [V, H] has the same bytes.
    CHECK(Simulated(t, plan, 2).saved == 20992);
  }
  {
    TestGraph t = LmHead(Head::kMatMulAdd);
    const FusedLossPlan plan = Apply(t, true);
    REQUIRE(plan.fused());
    CHECK(plan.head == "MatMul+Add");
    CHECK(plan.bias);
    // + grad_bias [100] fp32 = 400.
    CHECK(Simulated(t, plan, 2).saved == 20992 + 400);
  }
  {
    TestGraph t = LmHead(Head::kGemm);
    const FusedLossPlan plan = Apply(t, true);
    REQUIRE(plan.fused());
    CHECK(plan.head == "Gemm");
    CHECK(plan.bias);
    // x [b, 32] 128b, grad_input 128b, grad_weight 12800, grad_bias 400: b = 2 -> 13712.
    CHECK(Simulated(t, plan, 2).saved == 13712);
  }
}

TEST_CASE("fused loss without a head or with another loss is one error", "[fused_loss]") {
  {
    // Logits made by a Relu: no head.
    TestGraph t;
    ValueId x = t.Input("x", {t.B(), kSeq, kVocab});
    t.Output(t.Op("Relu", "relu", {x}, "logits", {t.B(), kSeq, kVocab}));
    auto plan = ApplyFusedLoss(t.graph, true, LossKind::kAuto, Bindings(&t.graph.symbols()),
                               "dir/relu.onnx");
    REQUIRE_FALSE(plan.ok());
    CHECK_THAT(plan.error().message, Catch::StartsWith("--fused-loss: no LM head feeds the loss "
                                                       "of model 'relu.onnx'"));
  }
  {
    TestGraph t = LmHead();
    auto plan =
        ApplyFusedLoss(t.graph, true, LossKind::kMse, Bindings(&t.graph.symbols()), "lm_head.onnx");
    REQUIRE_FALSE(plan.ok());
    CHECK_THAT(plan.error().message, Catch::Contains("is mse"));
  }
  {
    // The logits read again (an argmax): materialised anyway.
    TestGraph t = LmHead();
    const ValueId logits = t.graph.outputs().front();
    t.Op("ArgMax", "argmax", {logits}, "ids", {t.B(), kSeq}, DType::kInt64);
    auto plan = ApplyFusedLoss(t.graph, true, LossKind::kAuto, Bindings(&t.graph.symbols()),
                               "lm_head.onnx");
    REQUIRE_FALSE(plan.ok());
    CHECK_THAT(plan.error().message, Catch::Contains("is also read by node 'argmax'"));
  }
}

}  // namespace
}  // namespace memplan
