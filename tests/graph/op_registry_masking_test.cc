// Mod, Trilu and Bernoulli: shapes, folding of integer Mod (shape arithmetic), and that none of
// them saves a tensor for backward when it builds a mask.

#include <catch2/catch.hpp>

#include "tests/graph/op_registry_test_helpers.h"

namespace memplan {
namespace {

using testing::Dims;
using testing::Eval;
using testing::F32;
using testing::IntContents;
using testing::OpCase;
using testing::Tensor;

TEST_CASE("Mod folds integer shape arithmetic with both sign conventions", "[registry][mask]") {
  // Python-style (fmod=0): 7 % 3 = 1, -7 % 3 = 2. C-style (fmod=1): 7 fmod 3 = 1, -7 fmod 3 = -1.
  OpCase python("Mod", {IntContents({7, -7}), IntContents({3})});
  auto outs = python.Outputs();
  CHECK(outs[0].shape == Dims({2}));
  REQUIRE(outs[0].contents.has_value());
  CHECK(*outs[0].contents == std::vector<Dim>{Dim(1), Dim(2)});

  OpCase c_style("Mod", {IntContents({7, -7}), IntContents({3})});
  c_style.Attr("fmod", int64_t{1});
  REQUIRE(c_style.Outputs()[0].contents.has_value());
  CHECK(*c_style.Outputs()[0].contents == std::vector<Dim>{Dim(1), Dim(-1)});

  // A known integer divisor of 0 is refused (issue 45): left unfolded, a shape computed through it
  // became a generated unk_N symbol the user was asked to bind, and at run time an integer
  // division by zero is an error anyway.
  OpCase zero("Mod", {IntContents({7}), IntContents({0})});
  CHECK(zero.InferError() == "node 'n' (Mod): an integer division by zero in a shape computation");
}

TEST_CASE("Mod broadcasts and saves nothing for a constant divisor", "[registry][mask]") {
  // [4, 1, 6] % [1, 5, 1] -> [4, 5, 6]: 120 elements, 3 flops each.
  OpCase c("Mod", {F32({4, 1, 6}), F32({1, 5, 1}, ValueKind::kConstant)});
  c.Attr("fmod", int64_t{1});
  CHECK(c.OutputShape() == Dims({4, 5, 6}));
  CHECK(c.Saved().empty());
  CHECK(Eval(c.Cost().flops) == 360);
  // A trained divisor needs both operands for its gradient.
  OpCase trained("Mod", {F32({4, 1, 6}), F32({1, 5, 1}, ValueKind::kParameter)});
  CHECK(trained.Saved().size() == 2);
}

TEST_CASE("Trilu keeps its input's shape and saves nothing", "[registry][mask]") {
  SymbolTable symbols;
  Dim batch = Dim::Symbol(symbols.Intern("batch"));
  OpCase c("Trilu", {F32({batch, 8, 8}), IntContents({0})});
  CHECK(c.OutputShape() == Dims({batch, 8, 8}));
  CHECK(c.Saved().empty());
  CHECK(c.Gradients() == std::vector<bool>{true, false});
  OpCase vector("Trilu", {F32({8})});
  CHECK_FALSE(vector.Infer().ok());
}

TEST_CASE("CumSum keeps its input's shape, saves nothing and runs in fp32", "[registry][mask]") {
  SymbolTable symbols;
  Dim batch = Dim::Symbol(symbols.Intern("batch"));
  OpCase c("CumSum", {F32({batch, 16}), IntContents({1})});
  CHECK(c.OutputShape() == Dims({batch, 16}));
  CHECK(c.Saved().empty());
  CHECK(c.Gradients() == std::vector<bool>{true, false});
}

TEST_CASE("Bernoulli takes its dtype attribute and has no gradient", "[registry][mask]") {
  OpCase c("Bernoulli", {F32({3, 4})});
  c.Attr("dtype", int64_t{10});  // FLOAT16
  auto outs = c.Outputs();
  CHECK(outs[0].dtype == DType::kFloat16);
  CHECK(outs[0].shape == Dims({3, 4}));
  CHECK(c.Saved().empty());
  CHECK(c.Gradients() == std::vector<bool>{false});
}

TEST_CASE("packed 4-bit dtypes take half a byte per element", "[dtype]") {
  SymbolTable symbols;
  Dim batch = Dim::Symbol(symbols.Intern("batch"));
  CHECK(BitSize(DType::kInt4) == 4);
  CHECK(BitSize(DType::kFloat8E5M2) == 8);
  CHECK(TensorBytes(Dim(4096), DType::kInt4) == Dim(2048));
  CHECK(TensorBytes(Dim(15), DType::kFloat4E2M1) == Dim(8));  // 7 full bytes + one half
  // 2 * batch elements pack into batch bytes; batch elements cannot be halved exactly, so they
  // are charged a byte each (never less than the packed size).
  CHECK(TensorBytes(Dim(2) * batch, DType::kUInt4) == batch);
  CHECK(TensorBytes(batch, DType::kUInt4) == batch);
  CHECK(TensorBytes(Dim(10), DType::kFloat8E4M3FN) == Dim(10));
  CHECK(DTypeFromOnnx(23) == DType::kFloat4E2M1);
  CHECK(DTypeName(DType::kInt4) == "int4");
}

}  // namespace
}  // namespace memplan
