// Exports from tools other than torch.onnx: paddle2onnx/TensorFlow weights stored as Constant
// nodes, tf2onnx's fresh `unk__N` dims, and Dropout whose ratio (an input since opset 12) is 0.

#include <catch2/catch.hpp>

#include "graph/ops/op_registry.h"
#include "tests/graph/import_test_util.h"
#include "tests/graph/proto_model.h"

namespace memplan {
namespace {

using testing::HasWarningContaining;
using testing::ProtoModel;
using testing::SetInt;
using testing::ShapeOf;
using testing::ValueNamed;

constexpr int32_t kFloat = onnx::TensorProto::FLOAT;

struct ParameterTotals {
  int64_t trained = 0;
  int64_t buffers = 0;
};

ParameterTotals CountParameters(const Graph& g) {
  ParameterTotals totals;
  for (const Value& v : g.values()) {
    if (v.kind != ValueKind::kParameter) continue;
    const int64_t n = *v.shape.NumElements().constant_value();
    (v.trainable ? totals.trained : totals.buffers) += n;
  }
  return totals;
}

// x[batch, 3, 8, 8] -> Conv(W1 [4,3,3,3], b1 [4]) -> Relu -> Conv(W2 [8,4,3,3]) + bias2 [1,8,1,1]
// (paddle's conv2d + elementwise_add) -> BatchNorm(scale, B, mean, var: [8] each) ->
// GlobalAveragePool -> Flatten -> Gemm(Wfc [10, 8], bfc [10], transB) -> Mul(c [1]).
// Every weight is a Constant node, as paddle2onnx writes them.
TEST_CASE("weights stored as Constant nodes count as trainable parameters", "[import][foreign]") {
  ProtoModel m(13);
  m.Input("x", kFloat, {std::string("batch"), int64_t{3}, int64_t{8}, int64_t{8}});
  m.ConstantFloats("W1", {4, 3, 3, 3}).ConstantFloats("b1", {4});
  m.ConstantFloats("W2", {8, 4, 3, 3}).ConstantFloats("bias2", {1, 8, 1, 1});
  for (const char* bn : {"bn_scale", "bn_b", "bn_mean", "bn_var"}) m.ConstantFloats(bn, {8});
  m.ConstantFloats("Wfc", {10, 8}).ConstantFloats("bfc", {10});
  m.ConstantFloats("c", {1});
  auto& conv1 = m.Node("Conv", {"x", "W1", "b1"}, {"c1"});
  testing::SetInts(conv1, "pads", {1, 1, 1, 1});
  m.Node("Relu", {"c1"}, {"r1"});
  auto& conv2 = m.Node("Conv", {"r1", "W2"}, {"c2"});
  testing::SetInts(conv2, "pads", {1, 1, 1, 1});
  m.Node("Add", {"c2", "bias2"}, {"a2"});
  m.Node("BatchNormalization", {"a2", "bn_scale", "bn_b", "bn_mean", "bn_var"}, {"bn"});
  m.Node("GlobalAveragePool", {"bn"}, {"gap"});
  m.Node("Flatten", {"gap"}, {"flat"});
  auto& gemm = m.Node("Gemm", {"flat", "Wfc", "bfc"}, {"logits"});
  SetInt(gemm, "transB", 1);
  m.Node("Mul", {"logits", "c"}, {"y"});
  m.Output("y", kFloat, std::vector<testing::ProtoDim>{std::string("batch"), int64_t{10}});
  Graph g = m.Import("constant_weight_cnn.onnx");

  // Hand count: conv1 4*3*3*3 + 4 = 112; conv2 8*4*3*3 = 288 plus its bias 8 = 296; BatchNorm
  // scale + B = 16; Gemm 10*8 + 10 = 90. Trained: 112 + 296 + 16 + 90 = 514. BatchNorm's running
  // mean and var (8 + 8) are buffers; the scalar multiplier `c` is no weight.
  ParameterTotals totals = CountParameters(g);
  CHECK(totals.trained == 514);
  CHECK(totals.buffers == 16);
  CHECK(ValueNamed(g, "c").kind == ValueKind::kConstant);
  CHECK(HasWarningContaining(g, "10 weights stored as Constant nodes"));
  CHECK(ShapeOf(g, "y") == "[batch, 10]");
}

// tf2onnx: input [unk__0, 16]; it declares value_info h: [unk__1, 8] for MatMul's output and z:
// [unk__1, 8] for an op neither memplan nor libonnx knows, and the output as [unk__2, 8].
TEST_CASE("tf2onnx's fresh unk__N dims are unified with propagated shapes", "[import][foreign]") {
  ProtoModel m(13);
  m.Opset("com.example", 1);
  m.Input("x", kFloat, {std::string("unk__0"), int64_t{16}});
  m.Initializer("W", kFloat, {16, 8});
  m.Node("MatMul", {"x", "W"}, {"h"});
  m.Node("MysteryOp", {"h"}, {"z"}, "com.example");
  m.Node("Relu", {"z"}, {"y"});
  m.ValueInfo("h", kFloat, {std::string("unk__1"), int64_t{8}});
  m.ValueInfo("z", kFloat, {std::string("unk__1"), int64_t{8}});
  m.Output("y", kFloat, std::vector<testing::ProtoDim>{std::string("unk__2"), int64_t{8}});
  Graph g = m.Import("tf2onnx_unk.onnx");
  // MatMul's rule derives h = [unk__0, 8], so unk__1 is unk__0 (the batch) wherever declared.
  CHECK(ShapeOf(g, "h") == "[unk__0, 8]");
  CHECK(ShapeOf(g, "z") == "[unk__0, 8]");
  CHECK(ShapeOf(g, "y") == "[unk__0, 8]");
  CHECK(HasWarningContaining(g, "'unk__1' is unk__0 as propagated"));
  // Nothing left for the user to bind but the batch.
  for (const Value& v : g.values())
    for (const Dim& d : v.shape.dims)
      for (const auto& term : d.terms())
        for (SymbolId s : term.symbols) CHECK(g.symbols().Name(s) == "unk__0");
}

// Dropout(x, ratio, training_mode = true) at opset 13: the ratio is an input.
Graph DropoutModel(float ratio, const std::string& file, const ImportOptions& options = {}) {
  ProtoModel m(13);
  m.Input("x", kFloat, {std::string("batch"), int64_t{16}});
  m.Initializer("W", kFloat, {16, 16});
  m.FloatScalar("ratio", ratio).BoolScalar("training", true);
  m.Node("MatMul", {"x", "W"}, {"h"});
  m.Node("Dropout", {"h", "ratio", "training"}, {"d", "mask"});
  m.Node("Relu", {"d"}, {"y"});
  m.Output("y", kFloat, std::vector<testing::ProtoDim>{std::string("batch"), int64_t{16}});
  return m.Import(file, options);
}

std::vector<SavedTensor> DropoutSaved(const Graph& g) {
  NodeId dropout = *g.FindNode("d_node");
  const OpSchema& schema = OpRegistry::Get().FindOrUnknown("Dropout");
  return schema.saved_for_backward(MakeOpContext(g, dropout));
}

TEST_CASE("Dropout with a constant ratio input of 0 saves no mask", "[import][foreign]") {
  // PyTorch's dropout with p == 0 returns its input: no mask exists. The import fusion makes
  // such a node an Identity (graph/fusion/zero_dropout.cc); the registry's rule, read on the node
  // as exported, agrees.
  ImportOptions as_exported;
  as_exported.fusions = FusionSet::kNone;
  Graph g = DropoutModel(0.0f, "dropout_p0.onnx", as_exported);
  CHECK(g.node(*g.FindNode("d_node")).attributes.GetFloat("ratio", -1.0) == 0.0);
  CHECK(DropoutSaved(g).empty());
  Graph fused = DropoutModel(0.0f, "dropout_p0_fused.onnx");
  CHECK_FALSE(fused.FindNode("d_node").has_value());
  int identities = 0;
  for (const Node& n : fused.nodes()) identities += n.op_type == "Identity";
  CHECK(identities == 1);
}

TEST_CASE("Dropout with a nonzero ratio input saves its bool mask", "[import][foreign]") {
  Graph g = DropoutModel(0.1f, "dropout_p01.onnx");
  auto saved = DropoutSaved(g);
  REQUIRE(saved.size() == 1);
  CHECK(saved[0].source == SavedTensor::Source::kOutput);
  CHECK(saved[0].index == 1);
}

}  // namespace
}  // namespace memplan
