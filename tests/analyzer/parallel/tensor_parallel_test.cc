// --tp (analyzer/parallel/tensor_parallel.h): which linear layers of a transformer block split
// column- and row-parallel, what one rank holds, the all-reduces per micro-batch, and the
// refusals. Every expected number is derived by hand in the comment above it.

#include <catch2/catch.hpp>

#include <string>

#include "analyzer/cost/collective_cost.h"
#include "analyzer/cost/gpu_specs.h"
#include "analyzer/derivation/attention_plan.h"
#include "analyzer/parallel/tensor_parallel.h"
#include "analyzer/planning/planner.h"
#include "analyzer/simulation/exact_allocator.h"
#include "analyzer/simulation/simulator.h"
#include "graph/ops/split_axis_rules.h"
#include "tests/analyzer/derivation/program_test_derive.h"
#include "tests/analyzer/derivation/program_test_graphs.h"

namespace memplan {
namespace {

using testing::TestGraph;

constexpr int64_t kSeq = 8;
constexpr int64_t kHidden = 16;
constexpr int64_t kHeads = 4;
constexpr int64_t kHeadDim = 4;
constexpr int64_t kFfn = 64;

ValueId Transposed(TestGraph& t, const std::string& name, ValueId in, std::vector<int64_t> perm,
                   std::vector<Dim> dims) {
  ValueId out = t.Op("Transpose", name, {in}, name + "_out", std::move(dims));
  t.graph.mutable_node(t.NodeNamed(name)).attributes.Set("perm", std::move(perm));
  return out;
}

// One GPT-style pre-norm block "h.<i>" on x [B, 8, 16]: LayerNorm, q/k/v projections, 4 heads
// of 4, softmax attention, output projection, residual; LayerNorm, fc1 16 -> 64 with bias, Gelu,
// fc2 64 -> 16, residual.
ValueId Block(TestGraph& t, int index, ValueId x) {
  const std::string p = "/h." + std::to_string(index) + "/";
  const std::string w = "h." + std::to_string(index) + ".";
  const Dim B = t.B();
  auto ln = [&](const std::string& name, ValueId in) {
    ValueId g = t.Param(w + name + ".weight", {kHidden});
    ValueId b = t.Param(w + name + ".bias", {kHidden});
    return t.Op("LayerNormalization", p + name + "/LayerNormalization", {in, g, b}, p + name,
                {B, kSeq, kHidden});
  };
  ValueId h = ln("ln_1", x);
  auto heads = [&](const std::string& name) {
    ValueId weight = t.Param(w + "attn." + name + ".weight", {kHidden, kHidden});
    ValueId proj =
        t.Op("MatMul", p + "attn/" + name + "/MatMul", {h, weight}, p + name, {B, kSeq, kHidden});
    ValueId shape = t.Constant(p + name + "_shape", {4});
    ValueId split = t.Op("Reshape", p + "attn/Reshape_" + name, {proj, shape}, p + name + "_heads",
                         {B, kSeq, kHeads, kHeadDim});
    return split;
  };
  ValueId q =
      Transposed(t, p + "attn/Transpose_q", heads("q"), {0, 2, 1, 3}, {B, kHeads, kSeq, kHeadDim});
  ValueId k =
      Transposed(t, p + "attn/Transpose_k", heads("k"), {0, 2, 3, 1}, {B, kHeads, kHeadDim, kSeq});
  ValueId v =
      Transposed(t, p + "attn/Transpose_v", heads("v"), {0, 2, 1, 3}, {B, kHeads, kSeq, kHeadDim});
  ValueId scores =
      t.Op("MatMul", p + "attn/MatMul_scores", {q, k}, p + "scores", {B, kHeads, kSeq, kSeq});
  ValueId probs =
      t.Op("Softmax", p + "attn/Softmax", {scores}, p + "probs", {B, kHeads, kSeq, kSeq});
  ValueId context = t.Op("MatMul", p + "attn/MatMul_context", {probs, v}, p + "context",
                         {B, kHeads, kSeq, kHeadDim});
  ValueId merged = Transposed(t, p + "attn/Transpose_context", context, {0, 2, 1, 3},
                              {B, kSeq, kHeads, kHeadDim});
  ValueId flat =
      t.Op("Reshape", p + "attn/Reshape_context", {merged, t.Constant(p + "context_shape", {3})},
           p + "context_flat", {B, kSeq, kHidden});
  ValueId wo = t.Param(w + "attn.c_proj.weight", {kHidden, kHidden});
  ValueId attn =
      t.Op("MatMul", p + "attn/c_proj/MatMul", {flat, wo}, p + "attn_out", {B, kSeq, kHidden});
  ValueId r1 = t.Op("Add", p + "Add", {x, attn}, p + "residual_1", {B, kSeq, kHidden});
  ValueId h2 = ln("ln_2", r1);
  ValueId w1 = t.Param(w + "mlp.c_fc.weight", {kHidden, kFfn});
  ValueId b1 = t.Param(w + "mlp.c_fc.bias", {kFfn});
  ValueId fc1 = t.Op("MatMul", p + "mlp/c_fc/MatMul", {h2, w1}, p + "fc1", {B, kSeq, kFfn});
  ValueId biased = t.Op("Add", p + "mlp/c_fc/Add", {fc1, b1}, p + "fc1_bias", {B, kSeq, kFfn});
  ValueId act = t.Op("Gelu", p + "mlp/Gelu", {biased}, p + "gelu", {B, kSeq, kFfn});
  ValueId w2 = t.Param(w + "mlp.c_proj.weight", {kFfn, kHidden});
  ValueId fc2 = t.Op("MatMul", p + "mlp/c_proj/MatMul", {act, w2}, p + "fc2", {B, kSeq, kHidden});
  return t.Op("Add", p + "Add_1", {r1, fc2}, p + "out", {B, kSeq, kHidden});
}

TestGraph TwoBlocks() {
  TestGraph t;
  ValueId x = t.Input("x", {t.B(), kSeq, kHidden});
  t.Output(Block(t, 1, Block(t, 0, x)));
  return t;
}

const Shape& ShapeOf(const TestGraph& t, const std::string& name) {
  return t.graph.value(*t.graph.FindValue(name)).shape;
}

TEST_CASE("tensor parallel splits attention and MLP Megatron's way", "[tensor_parallel]") {
  TestGraph t = TwoBlocks();
  Expected<TensorParallelPlan> plan = ApplyTensorParallel(t.graph, 2, "two_blocks");
  REQUIRE(plan.ok());
  CHECK(plan->blocks == 2);
  CHECK(plan->blocks_split == 2);
  // Column: q, k, v and fc1 of each block; row: the attention output projection and fc2.
  CHECK(plan->column == std::vector<std::string>{"h.0.attn.q.weight", "h.0.attn.k.weight",
                                                 "h.0.attn.v.weight", "h.0.mlp.c_fc.weight",
                                                 "h.1.attn.q.weight", "h.1.attn.k.weight",
                                                 "h.1.attn.v.weight", "h.1.mlp.c_fc.weight"});
  CHECK(plan->row == std::vector<std::string>{"h.0.attn.c_proj.weight", "h.0.mlp.c_proj.weight",
                                              "h.1.attn.c_proj.weight", "h.1.mlp.c_proj.weight"});
  // Per block: 2 LayerNorms 2 * (16 + 16) = 64, q/k/v/out 4 * 16 * 16 = 1024, fc1 16 * 64 +
  // bias 64 = 1088, fc2 64 * 16 = 1024: 3200; two blocks 6400. Split 2 ways: LayerNorms stay 64,
  // q/k/v/out 4 * 128 = 512, fc1 512 + bias 32, fc2 512: 1632 per block, 3264 per rank.
  CHECK(plan->parameters_before == 6400);
  CHECK(plan->parameters_after == 3264);
  CHECK(ShapeOf(t, "h.0.attn.q.weight").dims == std::vector<Dim>{16, 8});
  CHECK(ShapeOf(t, "h.0.attn.c_proj.weight").dims == std::vector<Dim>{8, 16});
  CHECK(ShapeOf(t, "h.0.mlp.c_fc.bias").dims == std::vector<Dim>{32});
  CHECK(ShapeOf(t, "h.0.ln_1.weight").dims == std::vector<Dim>{16});
  // Activations: 2 heads per rank, half the MLP hidden units; norms and residuals whole.
  const Dim B = t.B();
  CHECK(ShapeOf(t, "/h.0/scores").dims == std::vector<Dim>{B, 2, kSeq, kSeq});
  CHECK(ShapeOf(t, "/h.0/context_flat").dims == std::vector<Dim>{B, kSeq, 8});
  CHECK(ShapeOf(t, "/h.1/gelu").dims == std::vector<Dim>{B, kSeq, 32});
  CHECK(ShapeOf(t, "/h.0/attn_out").dims == std::vector<Dim>{B, kSeq, kHidden});
  CHECK(ShapeOf(t, "/h.0/ln_2").dims == std::vector<Dim>{B, kSeq, kHidden});
  // Per block and micro-batch: forward all-reduces of the two row outputs, backward of the
  // gradients of the two column inputs (ln_1 feeds q, k and v: one all-reduce), each B * 8 * 16.
  REQUIRE(plan->forward_all_reduces.size() == 4);
  REQUIRE(plan->backward_all_reduces.size() == 4);
  for (const Dim& d : plan->forward_all_reduces) CHECK(d == B * Dim(kSeq * kHidden));
  for (const Dim& d : plan->backward_all_reduces) CHECK(d == B * Dim(kSeq * kHidden));
}

TEST_CASE("tensor parallel degree 1 leaves the graph as it is", "[tensor_parallel]") {
  TestGraph t = TwoBlocks();
  Expected<TensorParallelPlan> plan = ApplyTensorParallel(t.graph, 1, "two_blocks");
  REQUIRE(plan.ok());
  CHECK_FALSE(plan->enabled());
  CHECK(ShapeOf(t, "h.0.attn.q.weight").dims == std::vector<Dim>{16, 16});
}

TEST_CASE("a tensor-parallel degree that does not divide the heads is refused",
          "[tensor_parallel]") {
  // 4 heads cannot split 8 ways, although the 16 query features can: the reshape into heads
  // is where it stops.
  TestGraph t = TwoBlocks();
  Expected<TensorParallelPlan> plan = ApplyTensorParallel(t.graph, 8, "two_blocks");
  REQUIRE_FALSE(plan.ok());
  CHECK(plan.error().message ==
        "--tp 8: node '/h.0/attn/Reshape_q' (Reshape) in block 'h.0' of two_blocks cannot split "
        "8 ways: the heads or hidden units it splits are not a multiple of 8");
  // 3 divides nothing: no split at all.
  TestGraph u = TwoBlocks();
  Expected<TensorParallelPlan> none = ApplyTensorParallel(u.graph, 3, "two_blocks");
  REQUIRE_FALSE(none.ok());
  CHECK(none.error().message.find("no linear layer of two_blocks splits 3 ways") !=
        std::string::npos);
}

// x [B, 8, 16] -> q, k, v projections 16 -> 16 -> ONNX Attention with 3D inputs (4 heads of 4
// packed in the hidden axis) -> output projection -> y; fused into the sdpa node (head_size 4).
TestGraph PackedAttentionBlock() {
  TestGraph t;
  const Dim B = t.B();
  ValueId x = t.Input("x", {B, kSeq, kHidden});
  auto proj = [&](const std::string& name) {
    return t.Op("MatMul", name + "_proj", {x, t.Param(name + ".weight", {kHidden, kHidden})}, name,
                {B, kSeq, kHidden});
  };
  ValueId q = proj("q"), k = proj("k"), v = proj("v");
  ValueId a = t.Op("Attention", "attn", {q, k, v}, "a", {B, kSeq, kHidden});
  Attributes& attrs = t.graph.mutable_node(t.NodeNamed("attn")).attributes;
  attrs.Set("q_num_heads", kHeads);
  attrs.Set("kv_num_heads", kHeads);
  t.Output(t.Op("MatMul", "o_proj", {a, t.Param("o.weight", {kHidden, kHidden})}, "y",
                {B, kSeq, kHidden}));
  REQUIRE(ApplyAttentionMode(t.graph, AttentionMode::kSdpa, "packed").ok());
  return t;
}

TEST_CASE("a fused attention with packed 3D heads splits by whole heads", "[tensor_parallel]") {
  TestGraph t = PackedAttentionBlock();
  Expected<TensorParallelPlan> plan = ApplyTensorParallel(t.graph, 2, "packed");
  REQUIRE(plan.ok());
  CHECK(plan->column == std::vector<std::string>{"q.weight", "k.weight", "v.weight"});
  CHECK(plan->row == std::vector<std::string>{"o.weight"});
  // 2 of the 4 heads per rank: q and the attention output [B, 8, 8]; the node's head_size (4)
  // makes 8 / 4 = 2 heads of it. 4 * 256 = 1024 parameters -> 3 * 128 + 128 = 512.
  CHECK(ShapeOf(t, "q").dims == std::vector<Dim>{t.B(), kSeq, 8});
  CHECK(ShapeOf(t, "a").dims == std::vector<Dim>{t.B(), kSeq, 8});
  CHECK(plan->parameters_before == 1024);
  CHECK(plan->parameters_after == 512);
  // 8 ways would leave 2 features of a 4-wide head per rank: refused at the attention.
  TestGraph u = PackedAttentionBlock();
  Expected<TensorParallelPlan> eight = ApplyTensorParallel(u.graph, 8, "packed");
  REQUIRE_FALSE(eight.ok());
  CHECK(eight.error().message.find("(ScaledDotProductAttention)") != std::string::npos);
  CHECK(eight.error().message.find("cannot split 8 ways") != std::string::npos);
}

TEST_CASE("a lone linear layer whose output is the model's does not split", "[tensor_parallel]") {
  // Its split would reach the graph output, where the loss needs the whole tensor.
  TestGraph t = testing::Linear(16, 16);
  Expected<TensorParallelPlan> plan = ApplyTensorParallel(t.graph, 2, "linear");
  REQUIRE_FALSE(plan.ok());
  CHECK(plan.error().message ==
        "--tp 2: no linear layer of linear splits 2 ways (a column-parallel layer whose split "
        "reaches row-parallel ones, with heads and hidden units a multiple of 2)");
  CHECK(ShapeOf(t, "W").dims == std::vector<Dim>{16, 16});
}

TEST_CASE("an MLP outside any block splits too", "[tensor_parallel]") {
  // x [B, 16] -> fc1 16 -> 32 -> Relu -> fc2 32 -> 4: Megatron's MLP without module names.
  // Parameters 16 * 32 + 32 * 4 = 640; split 2 ways 256 + 64 = 320.
  TestGraph t;
  const Dim B = t.B();
  ValueId h =
      t.Op("MatMul", "fc1", {t.Input("x", {B, 16}), t.Param("fc1.weight", {16, 32})}, "h", {B, 32});
  ValueId r = t.Op("Relu", "relu", {h}, "r", {B, 32});
  t.Output(t.Op("MatMul", "fc2", {r, t.Param("fc2.weight", {32, 4})}, "y", {B, 4}));
  Expected<TensorParallelPlan> plan = ApplyTensorParallel(t.graph, 2, "mlp");
  REQUIRE(plan.ok());
  CHECK(plan->blocks == 0);
  CHECK(plan->parameters_before == 640);
  CHECK(plan->parameters_after == 320);
  CHECK(ShapeOf(t, "r").dims == std::vector<Dim>{B, 16});
}

TEST_CASE("a split that reaches a norm over the split axis stays whole", "[tensor_parallel]") {
  // h.0: x [B, 16] -> MatMul W [16, 32] -> LayerNorm (over the 32 features) -> MatMul V [32, 16].
  // The norm needs every feature: fc is not split; out, seeded next, reaches the graph output:
  // nothing splits.
  TestGraph t;
  const Dim B = t.B();
  ValueId x = t.Input("x", {B, 16});
  ValueId a =
      t.Op("MatMul", "/h.0/fc/MatMul", {x, t.Param("h.0.fc.weight", {16, 32})}, "a", {B, 32});
  ValueId n = t.Op("LayerNormalization", "/h.0/norm/LayerNormalization",
                   {a, t.Param("h.0.norm.weight", {32})}, "n", {B, 32});
  t.Output(
      t.Op("MatMul", "/h.0/out/MatMul", {n, t.Param("h.0.out.weight", {32, 16})}, "y", {B, 16}));
  Expected<TensorParallelPlan> plan = ApplyTensorParallel(t.graph, 2, "norm");
  REQUIRE_FALSE(plan.ok());
  CHECK(ShapeOf(t, "h.0.fc.weight").dims == std::vector<Dim>{16, 32});
}

TEST_CASE("split rules carry the axis through layout ops", "[tensor_parallel]") {
  // [B, 8, 16] split on its whole last axis, reshaped to [B, 8, 4, 4]: the 16 = 4 heads x 4 run
  // splits by heads (axis 2, factor 4, inner 1) when T divides 4.
  TestGraph t;
  const Dim B = t.B();
  ValueId x = t.Input("x", {B, 8, 16});
  ValueId heads = t.Op("Reshape", "r", {x, t.Constant("s", {4})}, "y", {B, 8, 4, 4});
  const Node& reshape = t.graph.node(t.NodeNamed("r"));
  const std::vector<TensorSplit> whole_last = {WholeAxisSplit(2, 16), TensorSplit{}};
  std::optional<SplitAxes> two = PropagateSplit(t.graph, reshape, whole_last, 2);
  REQUIRE(two);
  CHECK(two->outputs[0].axis == 2);
  CHECK(two->outputs[0].factor == 4);
  CHECK(two->outputs[0].inner == Dim(1));
  CHECK_FALSE(PropagateSplit(t.graph, reshape, whole_last, 8));
  // Folding the heads into the batch, [B, 8, 4, 4] -> [B*4, 8, 4] after a transpose to
  // [B, 4, 8, 4] (nn.MultiheadAttention's bmm layout): the heads stay the factor of axis 0,
  // with B above them.
  ValueId moved = Transposed(t, "t", heads, {0, 2, 1, 3}, {B, 4, 8, 4});
  t.Op("Reshape", "fold", {moved, t.Constant("s2", {3})}, "z", {B * Dim(4), 8, 4});
  std::optional<SplitAxes> by_head =
      PropagateSplit(t.graph, t.graph.node(t.NodeNamed("t")), {two->outputs[0]}, 2);
  REQUIRE(by_head);
  CHECK(by_head->outputs[0].axis == 1);
  std::optional<SplitAxes> folded = PropagateSplit(t.graph, t.graph.node(t.NodeNamed("fold")),
                                                   {by_head->outputs[0], TensorSplit{}}, 2);
  REQUIRE(folded);
  CHECK(folded->outputs[0].axis == 0);
  CHECK(folded->outputs[0].factor == 4);
}

TEST_CASE("tensor parallel halves the MLP's saved activations", "[tensor_parallel]") {
  // h.0 on x [B, 16]: fc1 16 -> 64, Gelu, fc2 64 -> 16. Autograd saves, fp32: fc2's input
  // (Gelu output) for grad(W2) and Gelu's input (fc1 output) — 64 + 64 floats per sample,
  // 512 bytes — and fc1's input x, a graph input. Split 2 ways each rank keeps 32 + 32 floats:
  // 256 bytes per sample.
  auto mlp = [] {
    TestGraph t;
    const Dim B = t.B();
    ValueId x = t.Input("x", {B, 16});
    ValueId f =
        t.Op("MatMul", "/h.0/fc1/MatMul", {x, t.Param("h.0.fc1.weight", {16, 64})}, "f", {B, 64});
    ValueId g = t.Op("Gelu", "/h.0/Gelu", {f}, "g", {B, 64});
    t.Output(
        t.Op("MatMul", "/h.0/fc2/MatMul", {g, t.Param("h.0.fc2.weight", {64, 16})}, "y", {B, 16}));
    return t;
  };
  auto saved = [](TestGraph& t) {
    TrainingProgram program = testing::DeriveVerified(t.graph, ProgramOptions{});
    ExactAllocator exact;
    Expected<SimulationResult> r = Simulate(program, t.Bind(4), exact, SimulationOptions{});
    REQUIRE(r.ok());
    return r->saved_activation_bytes;
  };
  TestGraph whole = mlp();
  TestGraph split = mlp();
  REQUIRE(ApplyTensorParallel(split.graph, 2, "mlp").ok());
  const int64_t whole_bytes = saved(whole);
  const int64_t split_bytes = saved(split);
  CHECK(whole_bytes - split_bytes == 4 * 256);
}

TEST_CASE("the tensor-parallel all-reduces are added to the step time", "[tensor_parallel]") {
  // Two blocks split 2 ways at m = 4, k = 3, fp32: per micro-batch 4 forward and 4 backward
  // all-reduces of 4 * 8 * 16 floats = 2,048 bytes each over 2 GPUs, none hidden by compute, so
  // the step costs 3 * 8 ring all-reduces more than the same split graph without them.
  TestGraph t = TwoBlocks();
  Expected<TensorParallelPlan> split = ApplyTensorParallel(t.graph, 2, "two_blocks");
  REQUIRE(split.ok());
  PlannerOptions options;
  options.gpu = ResolveGpu("A100-80GB").value();
  options.micro_batch = 4;
  options.global_batch = 12;
  options.allocator = AllocatorKind::kExact;
  TrainingPlan without = PlanTraining(t.graph, options).value();
  options.tensor_parallel = *split;
  TrainingPlan with = PlanTraining(t.graph, options).value();
  REQUIRE(with.chosen.accumulation_steps == 3);
  CollectiveCostOptions link = ResolvedCollectiveOptions(options);
  const double one = CollectiveSeconds(CollectiveKind::kAllReduce, 2048, 2, link);
  CHECK(one > 0);
  CHECK(with.time.communication_seconds == Approx(3 * 8 * one));
  CHECK(with.time.step_seconds - without.time.step_seconds == Approx(3 * 8 * one));
  // Memory is the split graph's either way.
  CHECK(with.chosen.peak_bytes == without.chosen.peak_bytes);
}

}  // namespace
}  // namespace memplan
