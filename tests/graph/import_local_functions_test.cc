// Model-local functions (graph/local_functions.h): every call imports as the function's body.
// The expected graphs are the layers written out by hand.

#include <catch2/catch.hpp>

#include <initializer_list>
#include <string>
#include <tuple>
#include <vector>

#include "tests/graph/import_test_util.h"
#include "tests/graph/proto_model.h"

namespace memplan {
namespace {

using testing::HasWarningContaining;
using testing::ProtoDim;
using testing::ProtoModel;
using testing::ShapeOf;

constexpr int32_t kFloat = onnx::TensorProto::FLOAT;

// A function of the "local" domain with these formal inputs and outputs; the caller adds the
// opsets its body imports and the body.
onnx::FunctionProto& AddLocalFunction(onnx::ModelProto& model, const std::string& name,
                                      std::initializer_list<const char*> inputs,
                                      std::initializer_list<const char*> outputs) {
  onnx::FunctionProto& f = *model.add_functions();
  f.set_name(name);
  f.set_domain("local");
  for (const char* in : inputs) f.add_input(in);
  for (const char* out : outputs) f.add_output(out);
  return f;
}

// local.Dense(X, W) -> Y with attribute alpha: Y = LeakyRelu(MatMul(X, W), alpha = @alpha).
onnx::FunctionProto& AddDense(onnx::ModelProto& model) {
  onnx::FunctionProto& f = AddLocalFunction(model, "Dense", {"X", "W"}, {"Y"});
  f.add_attribute("alpha");
  f.add_opset_import()->set_version(15);
  onnx::NodeProto& mm = *f.add_node();
  mm.set_name("MatMul_0");
  mm.set_op_type("MatMul");
  mm.add_input("X");
  mm.add_input("W");
  mm.add_output("t");
  onnx::NodeProto& act = *f.add_node();
  act.set_name("LeakyRelu_1");
  act.set_op_type("LeakyRelu");
  act.add_input("t");
  act.add_output("Y");
  onnx::AttributeProto& alpha = *act.add_attribute();
  alpha.set_name("alpha");
  alpha.set_type(onnx::AttributeProto::FLOAT);
  alpha.set_ref_attr_name("alpha");
  return f;
}

onnx::NodeProto& Call(ProtoModel& m, const std::string& function, std::vector<std::string> inputs,
                      std::vector<std::string> outputs, const std::string& name) {
  onnx::NodeProto& n = m.Node(function, std::move(inputs), std::move(outputs), "local");
  n.set_name(name);
  return n;
}

void SetAlpha(onnx::NodeProto& call, float alpha) {
  onnx::AttributeProto& a = *call.add_attribute();
  a.set_name("alpha");
  a.set_type(onnx::AttributeProto::FLOAT);
  a.set_f(alpha);
}

std::vector<std::string> OpTypes(const Graph& g) {
  std::vector<std::string> ops;
  for (const Node& n : g.nodes()) ops.push_back(n.op_type);
  return ops;
}

const std::vector<ProtoDim> kBatchBy4 = {std::string("batch"), int64_t{4}};

TEST_CASE("calls of a model-local function import as its body, with the call's attributes",
          "[import][functions]") {
  ProtoModel m(15);
  m.Opset("local", 1);
  AddDense(m.model());
  m.Input("x", kFloat, {std::string("batch"), int64_t{8}});
  m.Initializer("W1", kFloat, {8, 16}).Initializer("W2", kFloat, {16, 4});
  // The graph has a value "t" of its own, as the body's internal value is named: the two must
  // stay distinct.
  m.Initializer("t", kFloat, {1});
  SetAlpha(Call(m, "Dense", {"x", "W1"}, {"h"}, "/l1/Dense"), 0.5F);
  SetAlpha(Call(m, "Dense", {"h", "W2"}, {"y0"}, "/l2/Dense"), 0.25F);
  m.Node("Mul", {"y0", "t"}, {"y"});
  m.Output("y", kFloat, kBatchBy4);
  const Graph g = m.Import("local_dense.onnx");

  CHECK(OpTypes(g) ==
        std::vector<std::string>{"MatMul", "LeakyRelu", "MatMul", "LeakyRelu", "Mul"});
  CHECK(g.node(*g.FindNode("/l1/Dense/LeakyRelu_1")).attributes.GetFloat("alpha", 0) == 0.5);
  CHECK(g.node(*g.FindNode("/l2/Dense/LeakyRelu_1")).attributes.GetFloat("alpha", 0) == 0.25);
  CHECK(ShapeOf(g, "/l1/Dense/t") == "[batch, 16]");
  CHECK(ShapeOf(g, "h") == "[batch, 16]");
  CHECK(ShapeOf(g, "/l2/Dense/t") == "[batch, 4]");
  CHECK(ShapeOf(g, "t") == "[1]");
  // 8 x 16 + 16 x 4 trained weights, plus the 1-element scale.
  CHECK(testing::ParameterCount(g) == 8 * 16 + 16 * 4 + 1);
  CHECK(HasWarningContaining(g, "2 calls of 1 model-local function (local.Dense)"));
}

TEST_CASE("a function calling functions expands to the innermost ops", "[import][functions]") {
  ProtoModel m(15);
  m.Opset("local", 1);
  AddDense(m.model());
  // local.Block(X, W1, W2) -> Y = Dense(Dense(X, W1, alpha=0.1), W2, alpha=0.1) + X
  onnx::FunctionProto& block = AddLocalFunction(m.model(), "Block", {"X", "W1", "W2"}, {"Y"});
  block.add_opset_import()->set_version(15);
  block.add_opset_import()->set_domain("local");
  block.mutable_opset_import(1)->set_version(1);
  auto inner_call = [&](const std::string& name, const std::string& in, const std::string& w,
                        const std::string& out) {
    onnx::NodeProto& n = *block.add_node();
    n.set_name(name);
    n.set_op_type("Dense");
    n.set_domain("local");
    n.add_input(in);
    n.add_input(w);
    n.add_output(out);
    SetAlpha(n, 0.1F);
  };
  inner_call("d1", "X", "W1", "a");
  inner_call("d2", "a", "W2", "b");
  onnx::NodeProto& add = *block.add_node();
  add.set_name("residual");
  add.set_op_type("Add");
  add.add_input("b");
  add.add_input("X");
  add.add_output("Y");

  m.Input("x", kFloat, kBatchBy4);
  m.Initializer("Wa", kFloat, {4, 4}).Initializer("Wb", kFloat, {4, 4});
  m.Initializer("Wc", kFloat, {4, 4}).Initializer("Wd", kFloat, {4, 4});
  Call(m, "Block", {"x", "Wa", "Wb"}, {"h"}, "/b0/Block");
  Call(m, "Block", {"h", "Wc", "Wd"}, {"y"}, "/b1/Block");
  m.Output("y", kFloat, kBatchBy4);
  const Graph g = m.Import("local_nested.onnx");

  CHECK(OpTypes(g) == std::vector<std::string>{"MatMul", "LeakyRelu", "MatMul", "LeakyRelu", "Add",
                                               "MatMul", "LeakyRelu", "MatMul", "LeakyRelu",
                                               "Add"});
  CHECK(g.node(*g.FindNode("/b1/Block/d2/LeakyRelu_1")).attributes.GetFloat("alpha", 0) ==
        Approx(0.1));
  CHECK(ShapeOf(g, "/b0/Block/a") == "[batch, 4]");
  CHECK(testing::ParameterCount(g) == 4 * 16);
  // Two Block calls and four Dense calls inside them.
  CHECK(HasWarningContaining(g, "6 calls of 2 model-local functions (local.Block, local.Dense)"));
}

TEST_CASE("a call that leaves out an optional output still gets the body's value",
          "[import][functions]") {
  ProtoModel m(15);
  m.Opset("local", 1);
  // local.Pair(X) -> (Y, Z): Y = Relu(X), Z = Neg(Y). The call keeps only Y.
  onnx::FunctionProto& f = AddLocalFunction(m.model(), "Pair", {"X"}, {"Y", "Z"});
  f.add_opset_import()->set_version(15);
  for (auto [op, in, out] : {std::tuple{"Relu", "X", "Y"}, std::tuple{"Neg", "Y", "Z"}}) {
    onnx::NodeProto& n = *f.add_node();
    n.set_op_type(op);
    n.add_input(in);
    n.add_output(out);
  }
  m.Input("x", kFloat, kBatchBy4);
  Call(m, "Pair", {"x"}, {"y"}, "p");
  m.Output("y", kFloat, kBatchBy4);
  const Graph g = m.Import("local_pair.onnx");
  CHECK(OpTypes(g) == std::vector<std::string>{"Relu", "Neg"});
  CHECK(ShapeOf(g, "p/Z") == "[batch, 4]");
}

TEST_CASE("a function that calls itself or a call with too many inputs is a clear error",
          "[import][functions]") {
  SECTION("recursion") {
    ProtoModel m(15);
    m.Opset("local", 1);
    onnx::FunctionProto& f = AddLocalFunction(m.model(), "Loop", {"X"}, {"Y"});
    onnx::NodeProto& self = *f.add_node();
    self.set_op_type("Loop");
    self.set_domain("local");
    self.add_input("X");
    self.add_output("Y");
    m.Input("x", kFloat, kBatchBy4);
    Call(m, "Loop", {"x"}, {"y"}, "again");
    m.Output("y", kFloat, kBatchBy4);
    CHECK(m.ImportError("local_recursive.onnx") ==
          "model-local function 'local.Loop' calls itself, so it cannot be expanded into a "
          "training graph");
  }
  SECTION("arity") {
    ProtoModel m(15);
    m.Opset("local", 1);
    AddDense(m.model());
    m.Input("x", kFloat, {std::string("batch"), int64_t{8}});
    m.Initializer("W1", kFloat, {8, 4});
    Call(m, "Dense", {"x", "W1", "W1"}, {"y"}, "d");
    m.Output("y", kFloat, kBatchBy4);
    CHECK(m.ImportError("local_arity.onnx") ==
          "node 'd' calls model-local function 'local.Dense' with 3 inputs and 1 outputs; it "
          "declares 2 and 1");
  }
}

}  // namespace
}  // namespace memplan
