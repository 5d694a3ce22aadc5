// MatMul / Gemm / Einsum rules. Shapes were checked once against PyTorch 1.13 (torch.matmul,
// torch.einsum with the same operands); FLOPs are 2*M*N*K worked by hand.

#include <catch2/catch.hpp>

#include <array>
#include <vector>

#include "graph/ops/einsum_rules.h"
#include "tests/graph/op_registry_test_helpers.h"

namespace memplan {
namespace {

using namespace memplan::testing;

TEST_CASE("MatMul broadcasting and 1-D operands", "[registry]") {
  // torch.matmul: [2,1,3,4] @ [5,4,6] -> [2,5,3,6]; [4] @ [3,4,6] -> [3,6]; [3,4,6] @ [6] -> [3,4].
  OpCase batched("MatMul", {F32({2, 1, 3, 4}), F32({5, 4, 6})});
  CHECK(batched.OutputShape() == Dims({2, 5, 3, 6}));
  // 2 * batch(2*5) * M(3) * N(6) * K(4)
  CHECK(Eval(batched.Cost().flops) == 2 * 10 * 3 * 6 * 4);

  OpCase vec_mat("MatMul", {F32({4}), F32({3, 4, 6})});
  CHECK(vec_mat.OutputShape() == Dims({3, 6}));
  OpCase mat_vec("MatMul", {F32({3, 4, 6}), F32({6})});
  CHECK(mat_vec.OutputShape() == Dims({3, 4}));
  CHECK(Eval(mat_vec.Cost().flops) == 2 * 3 * 4 * 1 * 6);
  OpCase dot("MatMul", {F32({6}), F32({6})});
  CHECK(dot.OutputShape() == Dims({}));

  OpCase mismatch("MatMul", {F32({3, 4}), F32({5, 6})});
  CHECK_THAT(mismatch.InferError(), Catch::Contains("inner dimensions differ: 4 vs 5"));
}

TEST_CASE("MatMul keeps symbolic dims and FLOPs symbolic", "[registry]") {
  SymbolTable table;
  Dim b = Dim::Symbol(table.Intern("batch"));
  Dim s = Dim::Symbol(table.Intern("seq"));
  OpCase mlp("MatMul", {F32({b, s, 768}), Param({768, 3072})});
  CHECK(mlp.OutputShape() == Dims({b, s, 3072}));
  CHECK(mlp.Cost().flops == Dim(2 * 768 * 3072) * b * s);
  // Attention scores: [b,12,s,64] @ [b,12,64,s] -> [b,12,s,s].
  OpCase scores("MatMul", {F32({b, 12, s, 64}), F32({b, 12, 64, s})});
  CHECK(scores.OutputShape() == Dims({b, 12, s, s}));
}

TEST_CASE("MatMul and Gemm save each operand when the other needs a gradient", "[registry]") {
  // mm: self's grad uses mat2, mat2's grad uses self.
  OpCase hidden("MatMul", {F32({8, 16}), Param({16, 4})});
  CHECK(Describe(hidden.Saved()) == std::vector<std::string>{"in0", "in1"});
  // First layer on a graph input: x is kept for the weight gradient; the weight is not saved
  // because x needs no gradient.
  OpCase first("MatMul", {F32({8, 16}, ValueKind::kInput), Param({16, 4})});
  CHECK(Describe(first.Saved()) == std::vector<std::string>{"in0"});

  OpCase gemm("Gemm", {F32({8, 16}, ValueKind::kInput), Param({4, 16}), Param({4})});
  gemm.Attr("transB", int64_t{1});
  CHECK(Describe(gemm.Saved()) == std::vector<std::string>{"in0"});
}

TEST_CASE("Gemm shapes and FLOPs", "[registry]") {
  SymbolTable table;
  Dim b = Dim::Symbol(table.Intern("batch"));
  OpCase fc("Gemm", {F32({b, 512}), Param({1000, 512}), Param({1000})});
  fc.Attr("transB", int64_t{1});
  CHECK(fc.OutputShape() == Dims({b, 1000}));
  // 2*M*N*K + M*N (bias) = 2*b*1000*512 + b*1000.
  CHECK(fc.Cost().flops == Dim(2 * 1000 * 512 + 1000) * b);

  OpCase trans_a("Gemm", {F32({512, 7}), F32({512, 3})});
  trans_a.Attr("transA", int64_t{1});
  CHECK(trans_a.OutputShape() == Dims({7, 3}));
  CHECK(Eval(trans_a.Cost().flops) == 2 * 7 * 3 * 512);

  OpCase bad("Gemm", {F32({4, 5}), F32({4, 3})});
  CHECK_FALSE(bad.Infer().ok());
}

TEST_CASE("Einsum equations", "[registry]") {
  SECTION("parsing") {
    auto eq = ParseEinsumEquation("bhqd, bhkd -> bhqk", 2);
    REQUIRE(eq.ok());
    CHECK(eq->inputs == std::vector<std::string>{"bhqd", "bhkd"});
    CHECK(eq->output == "bhqk");
    // Implicit output: ellipsis, then once-used letters alphabetically ("ba" -> "ab").
    auto implicit = ParseEinsumEquation("...ij,...jk", 2);
    REQUIRE(implicit.ok());
    CHECK(implicit->output == ".ik");
    auto transpose = ParseEinsumEquation("ba", 1);
    REQUIRE(transpose.ok());
    CHECK(transpose->output == "ab");
    CHECK_FALSE(ParseEinsumEquation("ij,jk->ik", 3).ok());
    CHECK_FALSE(ParseEinsumEquation("i..j->ij", 1).ok());
    CHECK_FALSE(ParseEinsumEquation("i1->i", 1).ok());
  }
  SECTION("shapes and FLOPs") {
    // torch.einsum('bhqd,bhkd->bhqk', [2,4,5,8], [2,4,7,8]) -> [2,4,5,7].
    OpCase attn("Einsum", {F32({2, 4, 5, 8}), F32({2, 4, 7, 8})});
    attn.Attr("equation", std::string("bhqd,bhkd->bhqk"));
    CHECK(attn.OutputShape() == Dims({2, 4, 5, 7}));
    // 2 * b*h*q*k*d = 2 * 2*4*5*7*8
    CHECK(Eval(attn.Cost().flops) == 2 * 2 * 4 * 5 * 7 * 8);
    CHECK(Describe(attn.Saved()) == std::vector<std::string>{"in0", "in1"});

    // torch.einsum('...ij,...jk', [3,1,5,6], [2,6,4]) -> [3,2,5,4] (ellipsis dims broadcast).
    OpCase ellipsis("Einsum", {F32({3, 1, 5, 6}), F32({2, 6, 4})});
    ellipsis.Attr("equation", std::string("...ij,...jk"));
    CHECK(ellipsis.OutputShape() == Dims({3, 2, 5, 4}));

    OpCase transpose("Einsum", {F32({5, 6})});
    transpose.Attr("equation", std::string("ba"));
    CHECK(transpose.OutputShape() == Dims({6, 5}));
    CHECK(transpose.Saved().empty());  // one operand: a permutation keeps nothing

    OpCase conflict("Einsum", {F32({3, 4}), F32({5, 6})});
    conflict.Attr("equation", std::string("ij,jk->ik"));
    CHECK_FALSE(conflict.Infer().ok());
  }
}

TEST_CASE("Einsum operands as torch's bmm reads them", "[registry]") {
  // ATen's einsum + sumproduct_pair: the first operand as [batch, kept, contracted], the second
  // as [batch, contracted, kept], contracted letters in label order (A-Z, then a-z).
  auto layout = [](const char* equation, std::vector<Shape> shapes) {
    auto eq = ParseEinsumEquation(equation, shapes.size());
    REQUIRE(eq.ok());
    return EinsumBmmOperands(*eq, shapes);
  };
  const Shape q = Dims({2, 4, 5, 8});
  const Shape k = Dims({2, 4, 7, 8});
  const auto attn = layout("bhqd,bhkd->bhqk", {q, k});
  REQUIRE(attn.has_value());
  CHECK((*attn)[0].axes == std::vector<size_t>{0, 1, 2, 3});
  CHECK((*attn)[0].groups == std::array<size_t, 3>{2, 1, 1});
  CHECK((*attn)[1].axes == std::vector<size_t>{0, 1, 3, 2});  // [b, h, d, k]
  CHECK((*attn)[1].groups == std::array<size_t, 3>{2, 1, 1});
  // MaxViT's "B G H I D, B G H J D -> B G H I J" and its second product over J.
  const auto maxvit = layout("BGHIJ,BGHJD->BGHID", {Dims({2, 3, 4, 5, 5}), Dims({2, 3, 4, 5, 8})});
  REQUIRE(maxvit.has_value());
  CHECK((*maxvit)[1].axes == std::vector<size_t>{0, 1, 2, 3, 4});
  // Two contracted letters: 'D' (3) before 'a' (26), whatever their order in the term.
  const auto two = layout("iaD,jaD->ij", {Dims({3, 4, 5}), Dims({6, 4, 5})});
  REQUIRE(two.has_value());
  CHECK((*two)[0].axes == std::vector<size_t>{0, 2, 1});
  CHECK((*two)[1].axes == std::vector<size_t>{2, 1, 0});
  CHECK((*two)[1].groups == std::array<size_t, 3>{0, 2, 1});

  // torch takes another route, or sizes decide it: no contraction (mul), everything contracted
  // (dot), a letter summed in one operand alone, an ellipsis, a broadcast batch, one operand.
  CHECK_FALSE(layout("ij,ij->ij", {Dims({3, 4}), Dims({3, 4})}).has_value());
  CHECK_FALSE(layout("ij,ij->", {Dims({3, 4}), Dims({3, 4})}).has_value());
  CHECK_FALSE(layout("ij,jk->i", {Dims({3, 4}), Dims({4, 5})}).has_value());
  CHECK_FALSE(layout("...ij,...jk", {Dims({3, 5, 6}), Dims({3, 6, 4})}).has_value());
  CHECK_FALSE(layout("bij,bjk->bik", {Dims({1, 2, 3}), Dims({4, 3, 5})}).has_value());
  CHECK_FALSE(layout("ij->ji", {Dims({3, 4})}).has_value());
}

}  // namespace
}  // namespace memplan
