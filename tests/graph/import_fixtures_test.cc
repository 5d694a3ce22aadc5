// Imports the hand-built fixtures of tests/fixtures/make_fixtures.py.

#include <catch2/catch.hpp>

#include "tests/graph/import_test_util.h"

namespace memplan {
namespace {

using testing::HasWarningContaining;
using testing::ImportFixture;
using testing::ParameterCount;
using testing::ShapeOf;
using testing::ValueNamed;

TEST_CASE("tiny MLP imports with metadata, kinds and shapes", "[import]") {
  Graph g = ImportFixture("tiny_mlp.onnx");
  CHECK(g.ir_version == 8);
  CHECK(g.opset_imports.at("") == 13);
  CHECK(g.producer_name == "memplan-fixtures");
  CHECK(g.num_nodes() == 5);
  // W1[16,32] + b1[32] + W2[32,4] + b2[4] = 512 + 32 + 128 + 4 = 676 (make_fixtures.py).
  CHECK(ParameterCount(g) == 676);
  CHECK(ValueNamed(g, "x").kind == ValueKind::kInput);
  CHECK(ValueNamed(g, "W1").kind == ValueKind::kParameter);
  CHECK(ValueNamed(g, "h2").kind == ValueKind::kIntermediate);
  CHECK(ValueNamed(g, "y").is_graph_output);
  REQUIRE(g.batch_symbol().has_value());
  CHECK(g.symbols().Name(*g.batch_symbol()) == "batch");
  // The MLP's activations come from ONNX inference or the matmul/elementwise rules.
  CHECK(ShapeOf(g, "h0") == "[batch, 32]");
  CHECK(ShapeOf(g, "h2") == "[batch, 32]");
  CHECK(ShapeOf(g, "y") == "[batch, 4]");
}

TEST_CASE("an unknown op is a warning, never an error", "[import]") {
  Graph g = ImportFixture("unknown_op.onnx");
  CHECK(HasWarningContaining(
      g, "unknown op 'com.example::MysteryOp' (node 'mystery'): using a conservative estimate"));
  // Conservative shape: input 0's.
  CHECK(ShapeOf(g, "b") == "[batch, 8]");
  CHECK(ShapeOf(g, "y") == "[batch, 8]");
}

TEST_CASE("external data whose file is absent imports fine", "[import]") {
  Graph g = ImportFixture("external_absent.onnx");
  // W[64,32] (external) + b[32] = 2048 + 32 = 2080.
  CHECK(ParameterCount(g) == 2080);
  CHECK(ShapeOf(g, "W") == "[64, 32]");
}

TEST_CASE("a file whose nodes are listed out of order is sorted, not rejected", "[import]") {
  Graph g = ImportFixture("unsorted.onnx");
  auto order = g.TopologicalOrder();
  REQUIRE(order.ok());
  CHECK(g.node((*order)[0]).name == "first");
  CHECK(ShapeOf(g, "y") == "[batch, 4]");
}

TEST_CASE("a fixed batch dim warns that the micro-batch cannot vary", "[import]") {
  Graph g = ImportFixture("fixed_batch.onnx");
  CHECK_FALSE(g.batch_symbol().has_value());
  CHECK(HasWarningContaining(g, "fixed batch dim 8: the micro-batch cannot be varied"));
}

TEST_CASE("the batch symbol can be named explicitly", "[import]") {
  ImportOptions options;
  options.batch_symbol = "seq";
  Graph g = ImportFixture("shape_chain.onnx", options);
  REQUIRE(g.batch_symbol().has_value());
  CHECK(g.symbols().Name(*g.batch_symbol()) == "seq");

  options.batch_symbol = "nonexistent";
  auto bad = ImportOnnxModel(testing::Fixture("shape_chain.onnx"), options);
  REQUIRE_FALSE(bad.ok());
  CHECK(bad.error().message == "batch symbol 'nonexistent' is not a dim of any graph input");
}

TEST_CASE("Shape->Gather->Unsqueeze->Concat->Reshape folds to symbolic targets",
          "[import][folding]") {
  for (const char* fixture : {"shape_chain.onnx", "shape_chain_opset11.onnx"}) {
    INFO(fixture);
    Graph g = ImportFixture(fixture);
    const Value& shape = ValueNamed(g, "x_shape");
    CHECK(shape.kind == ValueKind::kConstant);
    REQUIRE(shape.contents.has_value());
    CHECK(shape.contents->size() == 3);
    CHECK(ShapeOf(g, "target4") == "[4]");
    // x[batch, seq, 768].view(B, T, 12, 64)
    CHECK(ShapeOf(g, "y4") == "[batch, seq, 12, 64]");
    // x.view(-1, 768): -1 = batch*seq*768 / 768 = batch*seq, divided exactly.
    CHECK(ShapeOf(g, "y2") == "[batch*seq, 768]");
    // x[:, 1:]: seq - 1
    CHECK(ShapeOf(g, "x_tail") == "[batch, seq - 1, 768]");
    CHECK(g.symbols().size() == 2);  // no fresh symbols were needed
  }
}

TEST_CASE("Mul of folded dims reaches a Reshape target", "[import][folding]") {
  // Needs the elementwise family's contents folding for Mul (B*T).
  Graph g = ImportFixture("shape_chain.onnx");
  CHECK(ShapeOf(g, "y2m") == "[batch*seq, 768]");
}

}  // namespace
}  // namespace memplan
