// The shared broadcast and view-shape geometry (graph/ops/geometry/broadcast.h, reshape.h) that
// the shape rules (symbolic dims), the CPU kernels and the CUDA ops (concrete dims) all use.
// Every expected shape is worked by hand in the comment beside it.

#include <catch2/catch.hpp>
#include <cstdint>
#include <limits>

#include "graph/ops/geometry/broadcast.h"
#include "graph/ops/geometry/reshape.h"

namespace memplan {
namespace {

using Ints = std::vector<int64_t>;

TEST_CASE("concrete broadcasting and its strides", "[geometry]") {
  // Right-aligned: [3, 1] against [2, 1, 4] -> [2, 3, 4].
  CHECK(*BroadcastDims({3, 1}, {2, 1, 4}) == Ints{2, 3, 4});
  CHECK(*BroadcastDims({}, {5}) == Ints{5});  // a scalar broadcasts to anything
  auto bad = BroadcastDims({2, 3}, {4, 2});
  REQUIRE_FALSE(bad.ok());
  CHECK(bad.error().message == "shapes [2, 3] and [4, 2] do not broadcast");
  // [3, 1] seen through [2, 3, 4]: the missing leading dim and the 1 repeat (stride 0); dim 3
  // steps by its row-major stride 1.
  CHECK(BroadcastStrides({3, 1}, {2, 3, 4}) == Ints{0, 1, 0});
  // [2, 3, 4] through itself: row-major strides 12, 4, 1.
  CHECK(BroadcastStrides({2, 3, 4}, {2, 3, 4}) == Ints{12, 4, 1});
}

TEST_CASE("symbolic broadcasting", "[geometry]") {
  SymbolTable table;
  const Dim batch = Dim::Symbol(table.Intern("batch"));
  // A 1 yields to the symbol; a symbol against 4 takes 4.
  auto out = BroadcastShapes(Shape{{batch, 1}}, Shape{{1, 4}});
  REQUIRE(out.ok());
  CHECK(*out == Shape{{batch, 4}});
  CHECK(*BroadcastShapes(Shape{{batch}}, Shape{{Dim(4)}}) == Shape{{Dim(4)}});
  CHECK_FALSE(BroadcastShapes(Shape{{2}}, Shape{{3}}).ok());
}

TEST_CASE("Reshape with 0 and -1", "[geometry]") {
  const Ints in{2, 3, 4};
  // 0 copies dim 0 (2); -1 takes 24 / 2 = 12.
  auto r = ReshapeShape<int64_t>(&in, {0, -1}, false);
  REQUIRE(r.ok());
  CHECK(r->dims == Ints{2, 12});
  CHECK_FALSE(r->unresolved.has_value());
  // With allowzero a 0 is a real 0-sized dim, and 24 elements cannot become 0.
  CHECK_FALSE(ReshapeShape<int64_t>(&in, {0, -1}, true).ok());
  // [3, 4] (12 elements) to [5]: the counts differ.
  const Ints small{3, 4};
  auto bad = ReshapeShape<int64_t>(&small, {5}, false);
  REQUIRE_FALSE(bad.ok());
  CHECK(bad.error().message == "cannot reshape [3, 4] (12 elements) to [5]");
  // 12 / 5 is no integer.
  CHECK_FALSE(ReshapeShape<int64_t>(&small, {5, -1}, false).ok());
  CHECK(ReshapeShape<int64_t>(&small, {-1, -1}, false).error().message ==
        "more than one -1 in the target shape");
  CHECK_FALSE(ReshapeShape<int64_t>(&small, {-2, 6}, false).ok());
  // A 0 at index 2 has no input dim to copy.
  CHECK_FALSE(ReshapeShape<int64_t>(&small, {1, 12, 0}, false).ok());
  // 2^62 * 4 overflows int64: an error, not undefined behaviour.
  const Ints huge{int64_t{1} << 62, 4};
  CHECK_FALSE(ReshapeShape<int64_t>(&huge, {-1}, false).ok());
}

TEST_CASE("symbolic Reshape", "[geometry]") {
  SymbolTable table;
  const Dim batch = Dim::Symbol(table.Intern("batch"));
  const Dim seq = Dim::Symbol(table.Intern("seq"));
  // [batch, seq, 768] to [-1, 768]: -1 = batch * seq * 768 / 768 = batch * seq.
  const std::vector<Dim> in{batch, seq, 768};
  auto r = ReshapeShape<Dim>(&in, {-1, 768}, false);
  REQUIRE(r.ok());
  CHECK(r->dims == std::vector<Dim>{batch * seq, 768});
  // [batch, 12] to [0, -1, 4]: 0 copies batch, -1 = 12 * batch / (batch * 4) = 3.
  const std::vector<Dim> in2{batch, 12};
  CHECK(ReshapeShape<Dim>(&in2, {0, -1, 4}, false)->dims == std::vector<Dim>{batch, 3, 4});
  // [batch * seq] to [batch, -1, 5]: seq / 5 is not a polynomial; the rule makes a symbol.
  const std::vector<Dim> flat{batch * seq};
  auto open = ReshapeShape<Dim>(&flat, {batch, -1, 5}, false);
  REQUIRE(open.ok());
  CHECK(open->unresolved == std::optional<size_t>(1));
  // An unknown input: a -1 stays open, a 0 leaves nothing known.
  CHECK(ReshapeShape<Dim>(nullptr, {-1, 5}, false)->unresolved == std::optional<size_t>(0));
  CHECK(ReshapeShape<Dim>(nullptr, {0, 5}, false)->needs_input);
}

TEST_CASE("Flatten, Squeeze and Unsqueeze shapes", "[geometry]") {
  const Ints in{2, 3, 4};
  CHECK(*FlattenShape(in, 0) == Ints{1, 24});  // empty outer product is 1
  CHECK(*FlattenShape(in, 1) == Ints{2, 12});  // the default axis
  CHECK(*FlattenShape(in, -1) == Ints{6, 4});  // -1 is axis 2
  CHECK(*FlattenShape(in, 3) == Ints{24, 1});  // axis = rank is allowed
  CHECK_FALSE(FlattenShape(in, 4).ok());

  const Ints ones{1, 3, 1};
  CHECK(*SqueezeShape(ones, {}) == Ints{3});       // every 1 goes
  CHECK(*SqueezeShape(ones, {-1}) == Ints{1, 3});  // -1 is axis 2
  auto bad = SqueezeShape(ones, {1});
  REQUIRE_FALSE(bad.ok());
  CHECK(bad.error().message == "cannot squeeze axis 1 of size 3");
  CHECK_FALSE(SqueezeShape(ones, {0, 0}).ok());  // repeated

  // [3, 4] with axes {0, -1}: output rank 4, so -1 is axis 3 -> [1, 3, 4, 1].
  CHECK(*UnsqueezeShape(Ints{3, 4}, {0, -1}) == Ints{1, 3, 4, 1});
  CHECK_FALSE(UnsqueezeShape(Ints{3, 4}, {4}).ok());
  CHECK_FALSE(UnsqueezeShape(Ints{3, 4}, {1, 1}).ok());

  SymbolTable table;
  const Dim batch = Dim::Symbol(table.Intern("batch"));
  // [batch, 3, 4] flattened at 1: [batch, 12]; a symbolic dim may be squeezed.
  CHECK(*FlattenShape(std::vector<Dim>{batch, 3, 4}, 1) == std::vector<Dim>{batch, 12});
  CHECK(*SqueezeShape(std::vector<Dim>{batch, 3}, {0}) == std::vector<Dim>{3});
}

}  // namespace
}  // namespace memplan
