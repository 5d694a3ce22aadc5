// ONNX type constraints between a node's inputs, checked at import (issue 45,
// graph/type_constraints.h): an int64 initializer added to a float activation is refused, not
// planned as a constant that silently stopped being a parameter.

#include <catch2/catch.hpp>

#include <string>
#include <vector>

#include "tests/graph/import_test_util.h"
#include "tests/graph/proto_model.h"

namespace memplan {
namespace {

using onnx::TensorProto;
using testing::ProtoDim;
using testing::ProtoModel;

TEST_CASE("an int64 bias added to a float MatMul is refused naming the node",
          "[import][bad-input]") {
  auto graph = ImportOnnxModel(testing::Fixture("hostile/int64_bias.onnx"));
  REQUIRE_FALSE(graph.ok());
  CHECK(graph.error().message ==
        "node 'fc_bias' (Add): input 0 'h' is float32 but input 1 'bias' is int64; ONNX's Add "
        "takes one type T for both (the initializer 'bias' would be a constant, never trained)");
}

TEST_CASE("inputs bound to different type parameters may differ", "[import]") {
  // Where(cond: bool, x: float, y: float) and Pow(float, int64 exponent: T1) are valid.
  ProtoModel m(/*opset=*/13);
  m.Input("x", TensorProto::FLOAT, {std::string("batch"), int64_t{4}});
  m.Initializer("W", TensorProto::FLOAT, {4, 4});
  m.Int64s("exponent", {2});
  m.Node("MatMul", {"x", "W"}, {"h"});
  m.Node("Pow", {"h", "exponent"}, {"p"});
  m.Node("IsNaN", {"p"}, {"nan"});
  m.Node("Where", {"nan", "h", "p"}, {"y"});
  m.Output("y", TensorProto::FLOAT, std::vector<ProtoDim>{std::string("batch"), int64_t{4}});
  Graph graph = m.Import("mixed_type_parameters.onnx");
  CHECK(graph.num_nodes() == 4);
}

TEST_CASE("a Concat of float and int64 is refused", "[import][bad-input]") {
  ProtoModel m(/*opset=*/13);
  m.Input("x", TensorProto::FLOAT, {std::string("batch"), int64_t{2}});
  m.Int64s("k", {1, 2});
  m.Node("Unsqueeze", {"k", "zero"}, {"k2"});
  m.Int64s("zero", {0});
  testing::SetInt(m.Node("Concat", {"x", "k2"}, {"y"}), "axis", 0);
  m.Output("y", TensorProto::FLOAT, std::vector<ProtoDim>{std::string("n"), int64_t{2}});
  CHECK(m.ImportError("concat_mixed.onnx") ==
        "node 'y_node' (Concat): input 0 'x' is float32 but input 1 'k2' is int64; ONNX's Concat "
        "takes one type T for both");
}

}  // namespace
}  // namespace memplan
