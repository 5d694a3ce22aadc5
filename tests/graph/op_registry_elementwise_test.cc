// Elementwise rules: broadcasting, folding of shape arithmetic, and the saved-for-backward sets
// of PyTorch autograd (derivatives.yaml; for torch 1.13 also read back from grad_fn._saved_*).

#include <catch2/catch.hpp>

#include "tests/graph/op_registry_test_helpers.h"

namespace memplan {
namespace {

using namespace memplan::testing;

TEST_CASE("binary ops broadcast", "[registry]") {
  SymbolTable table;
  Dim b = Dim::Symbol(table.Intern("batch"));
  OpCase add("Add", {F32({b, 1, 128}), F32({16, 1})});
  CHECK(add.OutputShape() == Dims({b, 16, 128}));
  OpCase bad("Mul", {F32({3, 4}), F32({5})});
  CHECK_THAT(bad.InferError(), Catch::Contains("node 'n' (Mul)"));
}

TEST_CASE("shape arithmetic folds symbolic contents", "[registry]") {
  SymbolTable table;
  Dim b = Dim::Symbol(table.Intern("batch"));
  Dim s = Dim::Symbol(table.Intern("seq"));

  SECTION("Div(Gather(Shape(x), 2), 12) = 768 / 12 = 64") {
    OpCase div("Div", {IntContents({768}), IntContents({12})});
    auto out = div.Outputs()[0];
    CHECK(out.dtype == DType::kInt64);
    REQUIRE(out.contents.has_value());
    CHECK(*out.contents == std::vector<Dim>{64});
  }
  SECTION("exact polynomial division and scalar broadcast") {
    // [batch*seq*768, 768] / 768 -> [batch*seq, 1]
    OpCase div("Div", {IntContents({b * s * Dim(768), 768}), IntContents({768})});
    auto out = div.Outputs()[0];
    REQUIRE(out.contents.has_value());
    CHECK(*out.contents == std::vector<Dim>{b * s, 1});
  }
  SECTION("truncating division of constants, a generated symbol for inexact ones") {
    OpCase div("Div", {IntContents({7}), IntContents({2})});
    CHECK(*div.Outputs()[0].contents == std::vector<Dim>{3});
    // seq // 12 is no polynomial: a new symbol, which binding seq determines
    // (graph/bound_shape_check.h DeterminedSymbols; tests/graph/determined_symbols_test.cc).
    OpCase inexact("Div", {IntContents({s}), IntContents({12})});
    const auto contents = inexact.Outputs()[0].contents;
    REQUIRE(contents.has_value());
    REQUIRE(contents->size() == 1);
    CHECK(contents->front().IsSingleSymbol());
    CHECK(contents->front() != s);
  }
  SECTION("Mul, Add, Sub, Neg") {
    OpCase mul("Mul", {IntContents({b, s}), IntContents({2})});
    CHECK(*mul.Outputs()[0].contents == std::vector<Dim>{Dim(2) * b, Dim(2) * s});
    OpCase add("Add", {IntContents({s}), IntContents({1})});
    CHECK(*add.Outputs()[0].contents == std::vector<Dim>{s + Dim(1)});
    OpCase sub("Sub", {IntContents({b, s}), IntContents({b, 1})});
    CHECK(*sub.Outputs()[0].contents == std::vector<Dim>{0, s - Dim(1)});
    OpCase neg("Neg", {IntContents({1, b})});
    CHECK(*neg.Outputs()[0].contents == std::vector<Dim>{-1, Dim(0) - b});
  }
  SECTION("float tensors carry no contents") {
    TensorInfo f = IntContents({4});
    f.dtype = DType::kFloat32;
    OpCase mul("Mul", {f, f});
    CHECK_FALSE(mul.Outputs()[0].contents.has_value());
  }
}

TEST_CASE("unary ops save what PyTorch autograd saves", "[registry]") {
  struct Expectation {
    const char* op;
    std::vector<std::string> saved;
  };
  // derivatives.yaml: relu/sigmoid/tanh/exp/sqrt/reciprocal use `result`; leaky_relu, clamp,
  // hardsigmoid, hardswish, gelu, erf, log, cos, sin use `self`; neg needs nothing. torch 1.13's
  // grad_fn._saved_result / _saved_self agree for every one of them.
  const Expectation table[] = {
      {"Relu", {"out0"}},       {"LeakyRelu", {"in0"}},
      {"Sigmoid", {"out0"}},    {"Tanh", {"out0"}},
      {"Clip", {"in0"}},        {"HardSigmoid", {"in0"}},
      {"HardSwish", {"in0"}},   {"Gelu", {"in0"}},
      {"Erf", {"in0"}},         {"Exp", {"out0"}},
      {"Log", {"in0"}},         {"Sqrt", {"out0"}},
      {"Reciprocal", {"out0"}}, {"Neg", {}},
      {"Cos", {"in0"}},         {"Sin", {"in0"}},
  };
  for (const auto& e : table) {
    INFO(e.op);
    OpCase op(e.op, {F32({4, 8})});
    CHECK(Describe(op.Saved()) == e.saved);
    CHECK(op.OutputShape() == Dims({4, 8}));
    // An op on a graph input (no requires_grad) is not recorded by autograd.
    OpCase on_input(e.op, {F32({4, 8}, ValueKind::kInput)});
    CHECK(on_input.Saved().empty());
  }
  OpCase clip("Clip", {F32({4}), F32({}, ValueKind::kParameter), F32({}, ValueKind::kParameter)});
  CHECK(clip.Gradients() == std::vector<bool>{true, false, false});
}

TEST_CASE("Add/Sub save nothing, Mul/Div/Pow save conditionally", "[registry]") {
  TensorInfo act = F32({4, 8});
  TensorInfo constant = Tensor(DType::kFloat32, {}, ValueKind::kConstant);
  TensorInfo input = F32({4, 8}, ValueKind::kInput);
  using V = std::vector<std::string>;

  CHECK(OpCase("Add", {act, act}).Saved().empty());
  CHECK(OpCase("Sub", {act, act}).Saved().empty());

  // mul.Tensor: each operand saved only if the other requires grad (grad_fn._saved_self is None
  // for x * c with c not requiring grad).
  CHECK(Describe(OpCase("Mul", {act, act}).Saved()) == V{"in0", "in1"});
  CHECK(Describe(OpCase("Mul", {act, constant}).Saved()) == V{"in1"});
  CHECK(Describe(OpCase("Mul", {input, Param({8})}).Saved()) == V{"in0"});

  // div.Tensor: divisor always; dividend only when the divisor requires grad.
  CHECK(Describe(OpCase("Div", {act, constant}).Saved()) == V{"in1"});
  CHECK(Describe(OpCase("Div", {constant, act}).Saved()) == V{"in0", "in1"});
  CHECK(Describe(OpCase("Div", {act, act}).Saved()) == V{"in0", "in1"});

  // x ** 2 is pow.Tensor_Scalar (self only); a trainable exponent is pow.Tensor_Tensor.
  CHECK(Describe(OpCase("Pow", {act, constant}).Saved()) == V{"in0"});
  CHECK(Describe(OpCase("Pow", {act, act}).Saved()) == V{"in0", "in1", "out0"});
  CHECK(OpCase("Pow", {act, constant}).Gradients() == std::vector<bool>{true, false});
}

TEST_CASE("Dropout keeps only a bool mask", "[registry]") {
  SymbolTable table;
  Dim b = Dim::Symbol(table.Intern("batch"));
  OpCase dropout("Dropout", {F32({b, 128})});
  auto saved = dropout.Saved();
  REQUIRE(Describe(saved) == std::vector<std::string>{"extra:dropout_mask"});
  CHECK(saved[0].dtype == DType::kBool);  // native_dropout's CUDA mask is torch.bool
  CHECK(saved[0].shape == Dims({b, 128}));

  OpCase with_mask("Dropout", {F32({4, 8}), Absent(), Absent()}, /*num_outputs=*/2);
  auto outs = with_mask.Outputs();
  CHECK(outs[1].dtype == DType::kBool);
  CHECK(outs[1].shape == Dims({4, 8}));
  CHECK(Describe(with_mask.Saved()) == std::vector<std::string>{"out1"});

  OpCase disabled("Dropout", {F32({4, 8})});
  disabled.Attr("ratio", 0.0);
  CHECK(disabled.Saved().empty());  // p == 0 returns the input itself
}

TEST_CASE("elementwise FLOPs per output element", "[registry]") {
  // 4*8 = 32 output elements.
  CHECK(Eval(OpCase("Relu", {F32({4, 8})}).Cost().flops) == 32);
  CHECK(Eval(OpCase("Gelu", {F32({4, 8})}).Cost().flops) == 32 * 8);  // erf(~4) + 4 arithmetic
  CHECK(Eval(OpCase("Exp", {F32({4, 8})}).Cost().flops) == 32 * 4);
  OpCost add = OpCase("Add", {F32({4, 8}), F32({8})}).Cost();
  CHECK(Eval(add.flops) == 32);
  CHECK(Eval(add.bytes_read) == (32 + 8) * 4);
  CHECK(Eval(add.bytes_written) == 32 * 4);
}

}  // namespace
}  // namespace memplan
