// Models newer than Debian's libonnx 1.12 (which knows ai.onnx opsets <= 17) import: libonnx's
// checker and shape inference are skipped with a note, and memplan's registry reads each op at
// the model's opset. The models are built with the protobuf API because the Python onnx 1.12
// cannot make or check them.

#include <catch2/catch.hpp>

#include "graph/ops/op_registry.h"
#include "tests/graph/import_test_util.h"
#include "tests/graph/proto_model.h"

namespace memplan {
namespace {

using testing::HasWarningContaining;
using testing::ProtoModel;
using testing::SetInt;
using testing::SetInts;
using testing::ShapeOf;
using testing::ValueNamed;

constexpr int32_t kFloat = onnx::TensorProto::FLOAT;
constexpr int32_t kInt64 = onnx::TensorProto::INT64;

// x[batch, 16, 8] -> ReduceMean(axes input [2]) -> Sub -> Split(num_outputs=2, axis=1) ->
// Pad(pads [1, 1], axes input [2]) and ReduceSum(axes input [1, 2], keepdims=0).
ProtoModel Opset18Model(int64_t opset) {
  ProtoModel m(opset);
  m.Input("x", kFloat, {std::string("batch"), int64_t{16}, int64_t{8}});
  m.Int64s("axes2", {2}).Int64s("axes12", {1, 2}).Int64s("pads", {1, 1});
  m.Node("ReduceMean", {"x", "axes2"}, {"m"});
  m.Node("Sub", {"x", "m"}, {"d"});
  auto& split = m.Node("Split", {"d"}, {"s0", "s1"});
  SetInt(split, "axis", 1);
  SetInt(split, "num_outputs", 2);
  m.Node("Pad", {"s0", "pads", "", "axes2"}, {"p"});
  auto& sum = m.Node("ReduceSum", {"s1", "axes12"}, {"r"});
  SetInt(sum, "keepdims", 0);
  m.Output("p").Output("r");
  return m;
}

TEST_CASE("an opset-18 model with axes as inputs imports with memplan's rules", "[import][opset]") {
  Graph g = Opset18Model(18).Import("opset18.onnx");
  CHECK(HasWarningContaining(g, "ONNX checker and shape inference not run"));
  CHECK(HasWarningContaining(g, "ai.onnx opset 18"));
  // ReduceMean over axis 2 keeps it as 1; Split halves 16; Pad adds 1 + 1 on axis 2 only;
  // ReduceSum over axes 1 and 2 without keepdims leaves [batch].
  CHECK(ShapeOf(g, "m") == "[batch, 16, 1]");
  CHECK(ShapeOf(g, "s0") == "[batch, 8, 8]");
  CHECK(ShapeOf(g, "s1") == "[batch, 8, 8]");
  CHECK(ShapeOf(g, "p") == "[batch, 8, 10]");
  CHECK(ShapeOf(g, "r") == "[batch]");
  CHECK(g.opset_imports.at("") == 18);
}

TEST_CASE("the same two-input ReduceMean at opset 17 still fails the ONNX checker",
          "[import][opset]") {
  // At opset 17 libonnx knows the op (axes is an attribute there): bad input stays bad input.
  auto g = Opset18Model(17).TryImport("opset17_bad.onnx");
  REQUIRE_FALSE(g.ok());
  CHECK(g.error().message.find("failed the ONNX checker") != std::string::npos);
}

TEST_CASE("an opset-17 model is still checked and inferred by libonnx, without a note",
          "[import][opset]") {
  ProtoModel m(17);
  m.Input("x", kFloat, {std::string("batch"), int64_t{4}});
  m.Node("Relu", {"x"}, {"y"});
  m.Output("y", kFloat, std::vector<testing::ProtoDim>{std::string("batch"), int64_t{4}});
  Graph g = m.Import("opset17_ok.onnx");
  CHECK_FALSE(HasWarningContaining(g, "not run"));
}

TEST_CASE("an opset-21 model with float8 and int4 tensors parses with true byte sizes",
          "[import][opset][dtype]") {
  ProtoModel m(21, /*ir_version=*/10);
  // float8e4m3fn (17), uint4 (21) and int4 (22) are absent from the 1.12 proto's enum: written
  // as raw codes.
  m.Input("x8", /*FLOAT8E4M3FN=*/17, {std::string("batch"), int64_t{64}});
  m.Initializer("w4", /*INT4=*/22, {64, 64});
  m.Initializer("odd4", /*UINT4=*/21, {3, 5});
  m.Initializer("w", kFloat, {64, 8});
  auto& cast = m.Node("Cast", {"x8"}, {"x"});
  SetInt(cast, "to", kFloat);
  m.Node("MatMul", {"x", "w"}, {"y"});
  m.Output("y");
  Graph g = m.Import("opset21.onnx");
  CHECK(HasWarningContaining(g, "ai.onnx opset 21"));
  const Value& x8 = ValueNamed(g, "x8");
  CHECK(x8.dtype == DType::kFloat8E4M3FN);
  CHECK(ByteSize(x8.dtype) == 1);
  const Value& w4 = ValueNamed(g, "w4");
  CHECK(w4.dtype == DType::kInt4);
  // 64 * 64 = 4096 int4 elements, two to a byte: 2048 bytes.
  CHECK(TensorBytes(w4.shape.NumElements(), w4.dtype) == Dim(2048));
  // 3 * 5 = 15 uint4 elements: 7 full bytes and one half-used byte = 8.
  const Value& odd4 = ValueNamed(g, "odd4");
  CHECK(odd4.dtype == DType::kUInt4);
  CHECK(TensorBytes(odd4.shape.NumElements(), odd4.dtype) == Dim(8));
  CHECK(ShapeOf(g, "y") == "[batch, 8]");
}

// x[batch, seq, 64] -> RMSNormalization -> q/k/v projections -> RotaryEmbedding(q) ->
// Attention(q_num_heads = kv_num_heads = 4) -> y[batch, seq, 64].
TEST_CASE("an opset-23 transformer block with RMSNormalization, RotaryEmbedding and Attention",
          "[import][opset]") {
  ProtoModel m(23, /*ir_version=*/10);
  m.Input("x", kFloat, {std::string("batch"), std::string("seq"), int64_t{64}});
  m.Input("pos", kInt64, {std::string("batch"), std::string("seq")});
  m.Initializer("scale", kFloat, {64});
  for (const char* w : {"wq", "wk", "wv"}) m.Initializer(w, kFloat, {64, 64});
  m.Initializer("cos", kFloat, {128, 8});
  m.Initializer("sin", kFloat, {128, 8});
  m.Node("RMSNormalization", {"x", "scale"}, {"h"});
  m.Node("MatMul", {"h", "wq"}, {"q"});
  m.Node("MatMul", {"h", "wk"}, {"k"});
  m.Node("MatMul", {"h", "wv"}, {"v"});
  auto& rope = m.Node("RotaryEmbedding", {"q", "cos", "sin", "pos"}, {"q_rot"});
  SetInt(rope, "num_heads", 4);
  auto& attention = m.Node("Attention", {"q_rot", "k", "v"}, {"y"});
  SetInt(attention, "q_num_heads", 4);
  SetInt(attention, "kv_num_heads", 4);
  m.Output("y");
  Graph g = m.Import("opset23.onnx");
  CHECK(HasWarningContaining(g, "ai.onnx opset 23"));
  CHECK(ShapeOf(g, "h") == "[batch, seq, 64]");
  CHECK(ShapeOf(g, "q_rot") == "[batch, seq, 64]");
  CHECK(ShapeOf(g, "y") == "[batch, seq, 64]");
  for (const Node& n : g.nodes()) {
    INFO(n.op_type);
    CHECK(OpRegistry::Get().FindOrUnknown(n.op_type, n.domain).is_known);
  }
  // Every weight is trained: 64 (scale) + 3 * 64 * 64 (projections); the rotary caches get no
  // gradient (RotaryEmbedding trains only X), so they are buffers.
  int64_t trained = 0;
  for (const Value& v : g.values())
    if (v.kind == ValueKind::kParameter && v.trainable)
      trained += *v.shape.NumElements().constant_value();
  CHECK(trained == 64 + 3 * 64 * 64);
}

TEST_CASE("an ai.onnx op this libonnx lacks skips its checker even at an old opset",
          "[import][opset]") {
  // ORT's transformer optimizer writes SimplifiedLayerNormalization in the default domain.
  ProtoModel m(17);
  m.Input("x", kFloat, {std::string("batch"), int64_t{8}});
  m.Initializer("scale", kFloat, {8});
  m.Node("SimplifiedLayerNormalization", {"x", "scale"}, {"y"});
  m.Output("y");
  Graph g = m.Import("ort_simplified_ln.onnx");
  CHECK(HasWarningContaining(g, "SimplifiedLayerNormalization"));
  CHECK(ShapeOf(g, "y") == "[batch, 8]");
}

}  // namespace
}  // namespace memplan
