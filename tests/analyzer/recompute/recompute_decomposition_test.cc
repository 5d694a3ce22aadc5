// Graph-to-chain reduction on hand-built graphs: a 3-block residual network and a 2-layer
// transformer-like stack, with the exact cut points, stage sizes and the recompute node sets.

#include <map>
#include <string>
#include <vector>

#include <catch2/catch.hpp>

#include "analyzer/recompute/chain_decomposition.h"
#include "analyzer/recompute/optimal_chain_planner.h"
#include "analyzer/recompute/recompute_schedule.h"
#include "graph/graph.h"
#include "graph/onnx_import.h"
#include "tests/graph/hand_built_graph.h"
#include "tests/test_paths.h"

namespace memplan {
namespace {

// Builds graphs by value name, remembering a byte size per value.
class GraphBuilder {
 public:
  ValueId Input(const std::string& name, int64_t bytes) {
    ValueId id = Add(name, ValueKind::kIntermediate, bytes);
    graph.MarkInput(id);
    return id;
  }
  ValueId Param(const std::string& name) { return Add(name, ValueKind::kParameter, 1000); }
  ValueId Const(const std::string& name) { return Add(name, ValueKind::kConstant, 8); }
  // One node with one output of `bytes` bytes named "<node name>:out".
  ValueId Op(const std::string& node_name, const std::string& op, std::vector<ValueId> inputs,
             int64_t bytes) {
    ValueId out = Add(node_name + ":out", ValueKind::kIntermediate, bytes);
    testing::NewNode(graph, node_name, op, std::move(inputs), {out});
    return out;
  }
  ChainCostFunctions Costs() const {
    ChainCostFunctions costs;
    costs.value_bytes = [this](ValueId v) { return bytes.at(v.index()); };
    costs.forward_time = [](NodeId) { return 1.0; };
    return costs;
  }
  std::vector<std::string> Names(const std::vector<NodeId>& ids) const {
    std::vector<std::string> names;
    for (NodeId id : ids) names.push_back(graph.node(id).name);
    return names;
  }

  Graph graph;
  std::vector<int64_t> bytes;

 private:
  ValueId Add(const std::string& name, ValueKind kind, int64_t size) {
    Value v;
    v.name = name;
    v.kind = kind;
    bytes.push_back(size);
    return graph.AddValue(std::move(v));
  }
};

// input -> stem Conv -> 3 x [Conv, Relu, Conv, Add(skip), Relu] -> GlobalAveragePool -> Gemm.
// Block value sizes: conv_a 10, relu_a 20, conv_b 40, add 50, relu 60 (same in every block).
GraphBuilder ResidualNetwork() {
  GraphBuilder b;
  ValueId x = b.Input("image", 300);
  ValueId h = b.Op("/stem/Conv", "Conv", {x, b.Param("stem.w")}, 60);
  for (int i = 1; i <= 3; ++i) {
    const std::string p = "/layer" + std::to_string(i);
    ValueId ca = b.Op(p + "/conv1/Conv", "Conv", {h, b.Param(p + ".w1")}, 10);
    ValueId ra = b.Op(p + "/relu/Relu", "Relu", {ca}, 20);
    ValueId cb = b.Op(p + "/conv2/Conv", "Conv", {ra, b.Param(p + ".w2")}, 40);
    ValueId add = b.Op(p + "/Add", "Add", {cb, h}, 50);
    h = b.Op(p + "/relu_1/Relu", "Relu", {add}, 60);
  }
  ValueId pooled = b.Op("/pool/GlobalAveragePool", "GlobalAveragePool", {h}, 4);
  ValueId logits = b.Op("/fc/Gemm", "Gemm", {pooled, b.Param("fc.w"), b.Param("fc.b")}, 2);
  b.graph.MarkOutput(logits);
  return b;
}

TEST_CASE("decomposition: residual network cuts after every Add and block ReLU", "[recompute]") {
  GraphBuilder b = ResidualNetwork();
  auto decomposition = DecomposeIntoChain(b.graph, b.Costs());
  REQUIRE(decomposition.ok());
  const ChainDecomposition& d = *decomposition;
  REQUIRE(d.stages.size() == 9);
  std::vector<std::vector<std::string>> stage_nodes;
  for (const ChainStageNodes& s : d.stages) stage_nodes.push_back(b.Names(s.nodes));
  CHECK(stage_nodes ==
        std::vector<std::vector<std::string>>{
            {"/stem/Conv"},
            {"/layer1/conv1/Conv", "/layer1/relu/Relu", "/layer1/conv2/Conv", "/layer1/Add"},
            {"/layer1/relu_1/Relu"},
            {"/layer2/conv1/Conv", "/layer2/relu/Relu", "/layer2/conv2/Conv", "/layer2/Add"},
            {"/layer2/relu_1/Relu"},
            {"/layer3/conv1/Conv", "/layer3/relu/Relu", "/layer3/conv2/Conv", "/layer3/Add"},
            {"/layer3/relu_1/Relu"},
            {"/pool/GlobalAveragePool"},
            {"/fc/Gemm"}});
  // The image is a graph input: not part of the chain. No parameter-free intermediates.
  CHECK(d.chain.input_bytes == 0);
  CHECK(d.parameter_free_values.empty());

  const ChainStage& block = d.chain.stages[1];
  CHECK(block.name == "/layer1/Add");
  CHECK(block.output_bytes == 50);
  CHECK(block.saved_bytes == 10 + 20 + 40);  // conv_a, relu_a, conv_b: all saved by default
  // Internal live bytes per node: conv1 {ca}=10, relu {ca,ra}=30, conv2 {ra,cb}=60, Add {cb}=40.
  CHECK(block.forward_overhead_bytes == 60);
  CHECK(block.backward_overhead_bytes == 60);
  CHECK(block.forward_time == 4);
  CHECK(block.backward_time == 4 * kDefaultBackwardToForwardRatio);
  CHECK(d.chain.stages[0].output_bytes == 60);  // stem
  CHECK(d.chain.stages[0].saved_bytes == 0);
  CHECK(d.chain.stages[8].output_bytes == 2);  // logits, the graph output
  CHECK(d.chain.stages[8].name == "/fc/Gemm");

  // Only relu_a's output is saved by the op's rule: the others leave the saved set.
  ChainCostFunctions costs = b.Costs();
  costs.saved_for_backward = [&](ValueId v) {
    return b.graph.value(v).name == "/layer1/relu/Relu:out";
  };
  auto narrowed = DecomposeIntoChain(b.graph, costs);
  REQUIRE(narrowed.ok());
  CHECK(narrowed->chain.stages[1].saved_bytes == 20);
}

TEST_CASE("decomposition: recompute nodes and checkpoint names of a schedule", "[recompute]") {
  GraphBuilder b = ResidualNetwork();
  auto d = DecomposeIntoChain(b.graph, b.Costs());
  REQUIRE(d.ok());
  const auto S = SegmentMode::kStored;
  const auto R = SegmentMode::kRecomputed;
  // Blocks 1 and 2 (with their ReLUs) recomputed as two segments; the rest stored.
  auto schedule =
      MakeRecomputeSchedule(d->chain, {{0, 0, S}, {1, 2, R}, {3, 4, R}, {5, 8, S}}, "test");
  REQUIRE(schedule.ok());
  auto selection = SelectRecomputeNodes(b.graph, *d, *schedule);
  REQUIRE(selection.ok());
  // Each segment's last output (the block ReLU) is kept, so its producer is not recomputed.
  CHECK(b.Names(selection->recompute_nodes) ==
        std::vector<std::string>{"/layer1/conv1/Conv", "/layer1/relu/Relu", "/layer1/conv2/Conv",
                                 "/layer1/Add", "/layer2/conv1/Conv", "/layer2/relu/Relu",
                                 "/layer2/conv2/Conv", "/layer2/Add"});
  // Checkpoints: the stem output (input of the first recomputed segment) and the kept ends.
  CHECK(selection->checkpoint_names ==
        std::vector<std::string>{"/stem/Conv", "/layer1/relu_1/Relu", "/layer2/relu_1/Relu"});

  auto wrong = MakeRecomputeSchedule(d->chain, {{0, 8, S}}, "test");
  REQUIRE(wrong.ok());
  auto none = SelectRecomputeNodes(b.graph, *d, *wrong);
  REQUIRE(none.ok());
  CHECK(none->recompute_nodes.empty());
  CHECK(none->checkpoint_names.empty());
}

// Token ids -> Gather(embedding) -> 2 x [LN, Q/K/V MatMul, scores + mask bias, Softmax, MatMul,
// out-proj, Add(residual), LN, MatMul, Relu, MatMul, Add(residual)] -> MatMul(lm head).
// The mask bias is computed from the attention-mask input only (Sub, Mul): parameter-free.
TEST_CASE("decomposition: transformer stack cuts after every residual Add", "[recompute]") {
  GraphBuilder b;
  ValueId ids = b.Input("input_ids", 64);
  ValueId mask = b.Input("attention_mask", 64);
  ValueId inverted = b.Op("/mask/Sub", "Sub", {b.Const("one"), mask}, 64);
  ValueId mask_bias = b.Op("/mask/Mul", "Mul", {inverted, b.Const("neg")}, 128);
  ValueId h = b.Op("/embed/Gather", "Gather", {b.Param("wte"), ids}, 100);
  for (int l = 0; l < 2; ++l) {
    const std::string p = "/h." + std::to_string(l);
    ValueId ln1 = b.Op(p + "/ln_1/LayerNormalization", "LayerNormalization",
                       {h, b.Param(p + ".g1"), b.Param(p + ".b1")}, 100);
    ValueId q = b.Op(p + "/attn/q/MatMul", "MatMul", {ln1, b.Param(p + ".wq")}, 100);
    ValueId k = b.Op(p + "/attn/k/MatMul", "MatMul", {ln1, b.Param(p + ".wk")}, 100);
    ValueId v = b.Op(p + "/attn/v/MatMul", "MatMul", {ln1, b.Param(p + ".wv")}, 100);
    ValueId scores = b.Op(p + "/attn/MatMul", "MatMul", {q, k}, 200);
    ValueId masked = b.Op(p + "/attn/Add", "Add", {scores, mask_bias}, 200);
    ValueId probs = b.Op(p + "/attn/Softmax", "Softmax", {masked}, 200);
    ValueId ctx = b.Op(p + "/attn/MatMul_1", "MatMul", {probs, v}, 100);
    ValueId proj = b.Op(p + "/attn/o/MatMul", "MatMul", {ctx, b.Param(p + ".wo")}, 100);
    ValueId h1 = b.Op(p + "/Add", "Add", {h, proj}, 100);
    ValueId ln2 = b.Op(p + "/ln_2/LayerNormalization", "LayerNormalization",
                       {h1, b.Param(p + ".g2"), b.Param(p + ".b2")}, 100);
    ValueId up = b.Op(p + "/mlp/fc/MatMul", "MatMul", {ln2, b.Param(p + ".w1")}, 400);
    ValueId act = b.Op(p + "/mlp/Relu", "Relu", {up}, 400);
    ValueId down = b.Op(p + "/mlp/proj/MatMul", "MatMul", {act, b.Param(p + ".w2")}, 100);
    h = b.Op(p + "/Add_1", "Add", {h1, down}, 100);
  }
  ValueId logits = b.Op("/lm_head/MatMul", "MatMul", {h, b.Param("lm_head.w")}, 500);
  b.graph.MarkOutput(logits);

  auto d = DecomposeIntoChain(b.graph, b.Costs());
  REQUIRE(d.ok());
  std::vector<std::string> outputs;
  for (const ChainStageNodes& s : d->stages) {
    outputs.push_back(s.output_producer.valid() ? b.graph.node(s.output_producer).name : "(end)");
  }
  // The mask bias crosses every boundary up to the last attention Add but does not count.
  CHECK(outputs == std::vector<std::string>{"/embed/Gather", "/h.0/Add", "/h.0/Add_1", "/h.1/Add",
                                            "/h.1/Add_1", "(end)"});
  CHECK(b.Names(d->stages[0].nodes) ==
        std::vector<std::string>{"/mask/Sub", "/mask/Mul", "/embed/Gather"});
  CHECK(d->chain.input_bytes == 64 + 128);  // Sub and Mul outputs, held for the whole step
  CHECK(d->parameter_free_values.size() == 2);
  // Attention stage of layer 0: ln1, q, k, v 100 each, scores/masked/probs 200 each, ctx and
  // proj 100 each: 4*100 + 3*200 + 2*100 = 1200 saved; output h1 100.
  CHECK(d->chain.stages[1].saved_bytes == 1200);
  CHECK(d->chain.stages[1].output_bytes == 100);
  CHECK(d->chain.stages[5].output_bytes == 500);

  // The mask nodes are never recomputed, even in a recomputed stage.
  const auto R = SegmentMode::kRecomputed;
  const auto S = SegmentMode::kStored;
  auto schedule = MakeRecomputeSchedule(d->chain, {{0, 1, R}, {2, 5, S}}, "test");
  REQUIRE(schedule.ok());
  auto selection = SelectRecomputeNodes(b.graph, *d, *schedule);
  REQUIRE(selection.ok());
  CHECK(selection->recompute_nodes.size() == 1 + 9);  // Gather + the attention stage but its Add
  CHECK(selection->checkpoint_names == std::vector<std::string>{"/h.0/Add"});

  // End to end: a budget between "everything" and "recompute all" picks some recompute.
  auto plan = PlanOptimalChain(d->chain, 3000);
  REQUIRE(plan.ok());
  CHECK(plan->predicted_peak_bytes <= 3000);
  CHECK(plan->NumRecomputedStages() > 0);
}

// torchvision's ResNet-18 as the zoo exports it: the stem's Conv, BatchNormalization, Relu and
// MaxPool each leave one tensor; each of the 8 BasicBlocks (2 per layer) is cut after its residual
// Add and after the ReLU that follows (the downsample branch stays inside the Add's stage); then
// GlobalAveragePool, Flatten and the fc Gemm: 4 + 8 * 2 + 3 = 23 stages. Cuts do not depend on
// sizes, so every value counts one byte here.
TEST_CASE("decomposition: the zoo's ResNet-18 cuts after every block Add and ReLU", "[recompute]") {
  auto graph = ImportOnnxModel(memplan::testing::ZooDir() + "/resnet18.onnx");
  REQUIRE(graph.ok());
  ChainCostFunctions costs;
  costs.value_bytes = [](ValueId) { return int64_t{1}; };
  costs.forward_time = [](NodeId) { return 1.0; };
  auto d = DecomposeIntoChain(*graph, costs);
  REQUIRE(d.ok());
  std::vector<std::string> expected = {"/conv1/Conv", "/bn1/BatchNormalization", "/relu/Relu",
                                       "/maxpool/MaxPool"};
  for (int layer = 1; layer <= 4; ++layer) {
    for (int block = 0; block < 2; ++block) {
      const std::string prefix = "/layer" + std::to_string(layer) + "/layer" +
                                 std::to_string(layer) + "." + std::to_string(block);
      expected.push_back(prefix + "/Add");
      expected.push_back(prefix + "/relu_1/Relu");
    }
  }
  expected.insert(expected.end(), {"/avgpool/GlobalAveragePool", "/Flatten", "/fc/Gemm"});
  std::vector<std::string> names;
  for (const ChainStage& stage : d->chain.stages) names.push_back(stage.name);
  CHECK(names == expected);
}

std::vector<std::vector<std::string>> StageNames(const GraphBuilder& b,
                                                 const ChainDecomposition& d) {
  std::vector<std::vector<std::string>> names;
  for (const ChainStageNodes& s : d.stages) names.push_back(b.Names(s.nodes));
  return names;
}

TEST_CASE("decomposition: a chain cuts after every node", "[recompute]") {
  // x -> n1 -> n2 -> n3 (output). After n1 only n1:out is live, after n2 only n2:out: two cuts.
  GraphBuilder b;
  ValueId x = b.Input("x", 100);
  ValueId v1 = b.Op("n1", "MatMul", {x, b.Param("w")}, 10);
  ValueId v2 = b.Op("n2", "Relu", {v1}, 20);
  b.graph.MarkOutput(b.Op("n3", "Relu", {v2}, 30));
  auto d = DecomposeIntoChain(b.graph, b.Costs());
  REQUIRE(d.ok());
  CHECK(StageNames(b, *d) == std::vector<std::vector<std::string>>{{"n1"}, {"n2"}, {"n3"}});
  CHECK(d->stages[0].output == v1);
  CHECK(d->stages[1].output == v2);
}

TEST_CASE("decomposition: a diamond is one stage between its fork and its join", "[recompute]") {
  // a -> {b, c} -> d -> e. Live after each node in order a, b, c, d: {a}, {a, b}, {b, c}, {d}:
  // cuts after a and after d; the two branches share a stage.
  GraphBuilder b;
  ValueId x = b.Input("x", 100);
  ValueId a = b.Op("a", "MatMul", {x, b.Param("w")}, 10);
  ValueId vb = b.Op("b", "Relu", {a}, 20);
  ValueId vc = b.Op("c", "Sigmoid", {a}, 30);
  ValueId d = b.Op("d", "Add", {vb, vc}, 40);
  b.graph.MarkOutput(b.Op("e", "Relu", {d}, 50));
  auto chain = DecomposeIntoChain(b.graph, b.Costs());
  REQUIRE(chain.ok());
  CHECK(StageNames(b, *chain) ==
        std::vector<std::vector<std::string>>{{"a"}, {"b", "c", "d"}, {"e"}});
  CHECK(chain->stages[0].output == a);
  CHECK(chain->stages[1].output == d);
  // Stage 1 saves b and c (20 + 30, d is its output); both are live at once over c: 50 bytes.
  CHECK(chain->chain.stages[1].saved_bytes == 50);
  CHECK(chain->chain.stages[1].forward_overhead_bytes == 50);
}

TEST_CASE("decomposition: errors", "[recompute]") {
  Graph empty;
  GraphBuilder b;
  CHECK_FALSE(DecomposeIntoChain(empty, b.Costs()).ok());
  GraphBuilder net = ResidualNetwork();
  CHECK_FALSE(DecomposeIntoChain(net.graph, ChainCostFunctions{}).ok());
}

}  // namespace
}  // namespace memplan
