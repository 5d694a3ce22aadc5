// View layouts (graph/ops/view_layout.h): strides by hand for the tensors torch code makes, and
// whether torch's reshape views them (computeStride) or copies. Each case names the torch code;
// PyTorch 1.13 agrees on every "views" / "copies" below (x.reshape(...)._base is x, or not).
#include <catch2/catch.hpp>

#include <optional>

#include "graph/ops/view_layout.h"
#include "graph/symbols.h"

namespace memplan {
namespace {

Shape S(std::initializer_list<Dim> dims) { return Shape{std::vector<Dim>(dims)}; }
Strides St(std::initializer_list<Dim> strides) { return Strides(strides); }

TEST_CASE("row-major strides and contiguity", "[views][layout]") {
  CHECK(RowMajorStrides(S({2, 3, 4})) == St({12, 4, 1}));
  CHECK(IsContiguousLayout(S({2, 3, 4}), {}));  // empty: a fresh tensor
  // x[:, :, 0:4] of x [2, 4, 8]: strides [32, 8, 1], not a dense block.
  CHECK_FALSE(IsContiguousLayout(S({2, 4, 4}), St({32, 8, 1})));
  // x[:, 0:4] of x [1, 8, 4]: the only axis before the cut has size 1, so it is one block.
  CHECK(IsContiguousLayout(S({1, 4, 4}), St({32, 4, 1})));
  // x.transpose(0, 1) of x [2, 4, 8]: [4, 2, 8] with strides [8, 32, 1].
  CHECK_FALSE(IsContiguousLayout(S({4, 2, 8}), St({8, 32, 1})));
}

TEST_CASE("reshape views what computeStride can express", "[views][layout]") {
  // x[:, :, 0:4].reshape(8, 4): the batch and row dims are one run (32 = 4 * 8): views, strides
  // [8, 1].
  CHECK(ReshapedStrides(S({2, 4, 4}), St({32, 8, 1}), S({8, 4})) == St({8, 1}));
  // ... .reshape(2, 16) merges the row dim (stride 8) with the cut last dim (4 * 1 != 8): copies.
  CHECK_FALSE(ReshapedStrides(S({2, 4, 4}), St({32, 8, 1}), S({2, 16})));
  // x.transpose(0, 1).reshape(8, 8): the leading dims do not merge (8 != 2 * 32): copies.
  CHECK_FALSE(ReshapedStrides(S({4, 2, 8}), St({8, 32, 1}), S({8, 8})));
  // ... .reshape(4, 2, 2, 4) only splits the last dim: views, strides [8, 32, 4, 1].
  CHECK(ReshapedStrides(S({4, 2, 8}), St({8, 32, 1}), S({4, 2, 2, 4})) == St({8, 32, 4, 1}));
  // k.transpose(-1, -2) of a dense k [2, 3, 5, 6] as bmm's [6, 6, 5]: batch dims merge
  // (90 = 3 * 30): views, strides [30, 1, 6].
  CHECK(ReshapedStrides(S({2, 3, 6, 5}), St({90, 30, 1, 6}), S({6, 6, 5})) == St({30, 1, 6}));
  // repeat_kv: k [2, 4, 1, 4] expanded to [2, 4, 3, 4] has strides [16, 4, 0, 1]; reshape to
  // [2, 12, 4] merges a stride-0 dim: copies.
  const auto expanded = ExpandedStrides(S({2, 4, 1, 4}), {}, S({2, 4, 3, 4}));
  REQUIRE(expanded);
  CHECK(*expanded == St({16, 4, 0, 1}));
  CHECK_FALSE(ReshapedStrides(S({2, 4, 3, 4}), *expanded, S({2, 12, 4})));
  // A new leading dim is broadcast too; a non-1 dim cannot be.
  CHECK(ExpandedStrides(S({4, 8}), {}, S({3, 4, 8})) == St({0, 8, 1}));
  CHECK_FALSE(ExpandedStrides(S({2, 8}), {}, S({3, 8})));
}

TEST_CASE("reshape strides stay exact over symbolic dims", "[views][layout]") {
  SymbolTable symbols;
  const Dim batch = Dim::Symbol(symbols.Intern("batch"));
  // A dense [batch, 4, 8] flattened to [4 * batch, 8]: strides [8, 1].
  CHECK(ReshapedStrides(S({batch, 4, 8}), {}, S({batch * 4, 8})) == St({8, 1}));
  // Its last-axis half [batch, 4, 4] (strides [32, 8, 1]) folds its rows the same way.
  CHECK(ReshapedStrides(S({batch, 4, 4}), St({32, 8, 1}), S({Dim(4) * batch, 4})) == St({8, 1}));
  // Symbolic dims count as longer than 1: a cut after one is strided.
  CHECK_FALSE(IsContiguousLayout(S({batch, 4}), St({8, 1})));
}

}  // namespace
}  // namespace memplan
