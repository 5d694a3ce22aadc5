// Shapes re-checked once --dim/--batch bind the symbols (issue 45, graph/bound_shape_check.h):
// each model imports (a rule cannot refuse what a later binding may make true) and plans only for
// the values its shapes can take.

#include <catch2/catch.hpp>

#include <optional>
#include <string>
#include <vector>

#include "graph/bind_symbols.h"
#include "tests/graph/import_test_util.h"
#include "tests/graph/proto_model.h"

namespace memplan {
namespace {

using Catch::Matchers::Contains;
using Catch::Matchers::StartsWith;
using onnx::TensorProto;
using testing::ProtoDim;
using testing::ProtoModel;

std::string BindError(const Graph& graph, std::vector<DimBinding> dims,
                      std::optional<int64_t> batch = std::nullopt) {
  auto bound = BindSymbols(graph, batch, dims);
  REQUIRE_FALSE(bound.ok());
  CHECK(bound.error().message.find('\n') == std::string::npos);
  return bound.error().message;
}

TEST_CASE("a contraction dim bound to a value the weight does not have is refused",
          "[symbols][bad-input]") {
  // y = x[batch, s] @ W[4, 4]: consistent only for s = 4.
  ProtoModel m(/*opset=*/13);
  m.Input("x", TensorProto::FLOAT, {std::string("batch"), std::string("s")});
  m.Initializer("W", TensorProto::FLOAT, {4, 4});
  m.Node("MatMul", {"x", "W"}, {"y"});
  m.Output("y", TensorProto::FLOAT, std::vector<ProtoDim>{std::string("batch"), int64_t{4}});
  Graph graph = m.Import("matmul_symbolic_inner.onnx");
  CHECK(BindSymbols(graph, std::nullopt, {{"s", 4}}).ok());
  const std::string error = BindError(graph, {{"s", 128}});
  CHECK_THAT(error, StartsWith("with --dim s=128: node 'y_node' (MatMul)"));
  CHECK_THAT(error, Contains("128"));
  // --batch alone binds nothing the contraction reads.
  CHECK(BindSymbols(graph, 8, {}).ok());
}

TEST_CASE("a Reshape whose element count holds for one value of a symbol is re-checked",
          "[symbols][bad-input]") {
  // x[batch, s] reshaped to [batch, 2, 2]: 4 elements per row, so only s = 4.
  ProtoModel m(/*opset=*/13);
  m.Input("x", TensorProto::FLOAT, {std::string("batch"), std::string("s")});
  m.Int64s("target", {0, 2, 2});
  m.Node("Reshape", {"x", "target"}, {"y"});
  m.Output("y", TensorProto::FLOAT,
           std::vector<ProtoDim>{std::string("batch"), int64_t{2}, int64_t{2}});
  Graph graph = m.Import("reshape_symbolic.onnx");
  CHECK(BindSymbols(graph, 2, {{"s", 4}}).ok());
  // 2 * 5 = 10 elements cannot be [2, 2, 2] = 8. (With the batch unbound the counts are 5*batch
  // and 4*batch, which the Reshape rule compares only as numbers: the batch must be bound too.)
  CHECK_THAT(BindError(graph, {{"s", 5}}, 2),
             StartsWith("with --batch 2, --dim s=5: node 'y_node' (Reshape): cannot reshape"));
}

TEST_CASE("an Expand or a broadcast that needs a symbol of 1 or N is re-checked",
          "[symbols][bad-input]") {
  // y = x[batch, s] + b[4]: broadcast needs s = 4 or s = 1.
  ProtoModel m(/*opset=*/13);
  m.Input("x", TensorProto::FLOAT, {std::string("batch"), std::string("s")});
  m.Initializer("b", TensorProto::FLOAT, {4});
  m.Node("Add", {"x", "b"}, {"y"});
  m.Output("y", TensorProto::FLOAT, std::vector<ProtoDim>{std::string("batch"), int64_t{4}});
  Graph graph = m.Import("broadcast_symbolic.onnx");
  CHECK(BindSymbols(graph, std::nullopt, {{"s", 4}}).ok());
  CHECK(BindSymbols(graph, std::nullopt, {{"s", 1}}).ok());
  CHECK_THAT(BindError(graph, {{"s", 3}}), StartsWith("with --dim s=3: node 'y_node' (Add)"));
}

TEST_CASE("bindings of a valid model stay accepted", "[symbols]") {
  // The transformer fixture binds batch and seq freely: every value of seq is a valid length.
  Graph graph = testing::ImportFixture("transformer_opset17.onnx");
  std::vector<DimBinding> dims;
  for (size_t i = 0; i < graph.symbols().size(); ++i) {
    const std::string& name = graph.symbols().Name(static_cast<SymbolId>(i));
    if (graph.batch_symbol() != static_cast<SymbolId>(i)) dims.push_back({name, 77});
  }
  auto bound = BindSymbols(graph, 3, dims);
  if (!bound.ok()) FAIL(bound.error().message);
}

}  // namespace
}  // namespace memplan
