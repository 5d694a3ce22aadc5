// The shared window geometry (graph/ops/geometry/window.h) that the shape rules, the CPU kernels
// and the CUDA ops all use. Every expected size is worked by hand in the comment beside it.

#include <catch2/catch.hpp>
#include <cstdint>
#include <limits>
#include <string>

#include "graph/ops/geometry/window.h"

namespace memplan {
namespace {

using Ints = std::vector<int64_t>;

WindowAttributes Window(const Attributes& attributes, Ints kernel, bool ceil_mode_allowed = true) {
  auto w = ReadWindowAttributes(attributes, kernel.size(), kernel, ceil_mode_allowed);
  REQUIRE(w.ok());
  return *w;
}

TEST_CASE("Conv 7x7 stride 2 pad 3 on 224 gives 112", "[geometry]") {
  Attributes a;
  a.Set("strides", Ints{2, 2});
  a.Set("pads", Ints{3, 3, 3, 3});
  const WindowAttributes w = Window(a, {7, 7}, false);
  // floor((224 + 3 + 3 - 7) / 2) + 1 = floor(223 / 2) + 1 = 112.
  auto axis = ResolveWindowAxis(w, 0, 224);
  REQUIRE(axis.ok());
  CHECK(axis->output == 112);
  CHECK(axis->pad_begin == 3);
  CHECK(axis->pad_end == 3);
  // Output 5, tap 6 reads input 5 * 2 - 3 + 6 = 13.
  CHECK(axis->InputIndex(5, 6) == 13);
}

TEST_CASE("SAME padding with stride 2 on an odd size", "[geometry]") {
  // in 7, kernel 4, stride 2: out = ceil(7 / 2) = 4; total pad = (4 - 1) * 2 + 4 - 7 = 3.
  Attributes upper;
  upper.Set("strides", Ints{2});
  upper.Set("auto_pad", std::string("SAME_UPPER"));
  auto u = ResolveWindowAxis(Window(upper, {4}), 0, 7);
  REQUIRE(u.ok());
  CHECK(u->output == 4);
  CHECK(u->pad_begin == 1);  // SAME_UPPER puts the odd pad at the end: 1 + 2
  CHECK(u->pad_end == 2);

  Attributes lower = upper;
  lower.Set("auto_pad", std::string("SAME_LOWER"));
  auto l = ResolveWindowAxis(Window(lower, {4}), 0, 7);
  REQUIRE(l.ok());
  CHECK(l->output == 4);
  CHECK(l->pad_begin == 2);  // SAME_LOWER: 2 + 1
  CHECK(l->pad_end == 1);

  // The explicit-pad formula over the resolved pads agrees: floor((7 + 3 - 4) / 2) + 1 = 4.
  CHECK(PaddedWindowOutput(7, 4, 2, 1, u->pad_begin, u->pad_end, false) == 4);
}

TEST_CASE("VALID ignores pads, dilation widens the span", "[geometry]") {
  Attributes a;
  a.Set("auto_pad", std::string("VALID"));
  a.Set("pads", Ints{5, 5});
  a.Set("dilations", Ints{2});
  // span = 2 * (3 - 1) + 1 = 5; out = (10 - 5) / 1 + 1 = 6 with no padding.
  auto axis = ResolveWindowAxis(Window(a, {3}), 0, 10);
  REQUIRE(axis.ok());
  CHECK(axis->output == 6);
  CHECK(axis->pad_begin == 0);
}

TEST_CASE("ceil_mode keeps the last window inside the input or its leading pad", "[geometry]") {
  Attributes a;
  a.Set("strides", Ints{2});
  a.Set("ceil_mode", int64_t{1});
  // in 6, kernel 3, stride 2: floor would be (6 - 3) / 2 + 1 = 2; ceil(3 / 2) + 1 = 3 and the last
  // window starts at 4 < 6.
  CHECK(ResolveWindowAxis(Window(a, {3}), 0, 6)->output == 3);
  // in 5, kernel 2, stride 2, pads 1 + 1: ceil((5 + 2 - 2) / 2) + 1 = 4, but window 3 would start
  // at 3 * 2 = 6 >= 5 + 1, past the input and its leading pad, so it is dropped: 3.
  a.Set("pads", Ints{1, 1});
  CHECK(ResolveWindowAxis(Window(a, {2}), 0, 5)->output == 3);
  // Conv has no ceil_mode: not read.
  CHECK(ResolveWindowAxis(Window(a, {2}, false), 0, 5)->output == 3);  // floor(5/2)+1 = 3
  CHECK_FALSE(Window(a, {3}, false).ceil_mode);
}

TEST_CASE("valid output ranges per kernel tap", "[geometry]") {
  Attributes a;
  a.Set("strides", Ints{2});
  a.Set("pads", Ints{1, 1});
  // in 5, kernel 3, stride 2, pads 1 + 1: out = (5 + 2 - 3) / 2 + 1 = 3.
  auto axis = ResolveWindowAxis(Window(a, {3}), 0, 5);
  REQUIRE(axis.ok());
  REQUIRE(axis->output == 3);
  // Tap 0 reads 2o - 1: inside [0, 5) for o = 1, 2.
  CHECK(axis->ValidOutputs(0).first == 1);
  CHECK(axis->ValidOutputs(0).last == 3);
  // Tap 2 reads 2o + 1: inside for o = 0, 1.
  CHECK(axis->ValidOutputs(2).first == 0);
  CHECK(axis->ValidOutputs(2).last == 2);
}

TEST_CASE("bad window attributes are errors, never undefined behaviour", "[geometry]") {
  SECTION("a window larger than the padded input") {
    auto axis = ResolveWindowAxis(Window(Attributes(), {3}), 0, 2);
    REQUIRE_FALSE(axis.ok());
    CHECK(axis.error().message ==
          "a window of span 3 does not fit spatial axis 0 of size 2 padded by 0 + 0");
  }
  SECTION("pads near 2^63 overflow") {
    Attributes a;
    const int64_t huge = std::numeric_limits<int64_t>::max() - 1;
    a.Set("pads", Ints{huge, 5});
    auto axis = ResolveWindowAxis(Window(a, {3}), 0, 10);
    REQUIRE_FALSE(axis.ok());
    CHECK(axis.error().message == "window sizes of spatial axis 0 overflow int64");
    CHECK_FALSE(WindowOutputDim(Dim(10), Window(a, {3}), 0).ok());
  }
  SECTION("a dilated kernel near 2^63 overflows") {
    Attributes a;
    a.Set("dilations", Ints{std::numeric_limits<int64_t>::max() / 2});
    CHECK_FALSE(ResolveWindowAxis(Window(a, {4}), 0, 10).ok());
  }
  SECTION("attribute errors") {
    Attributes a;
    a.Set("auto_pad", std::string("SAME"));
    auto w = ReadWindowAttributes(a, 1, {3}, true);
    REQUIRE_FALSE(w.ok());
    CHECK(w.error().message == "unknown auto_pad 'SAME'");
    Attributes negative;
    negative.Set("pads", Ints{-1, 0});
    CHECK_FALSE(ReadWindowAttributes(negative, 1, {3}, true).ok());
    Attributes short_strides;
    short_strides.Set("strides", Ints{1});
    auto s = ReadWindowAttributes(short_strides, 2, {3, 3}, true);
    REQUIRE_FALSE(s.ok());
    CHECK(s.error().message ==
          "strides has 1 values but the input has 2 spatial axes (expected 2)");
  }
}

TEST_CASE("symbolic window sizes", "[geometry]") {
  SymbolTable table;
  const Dim h = Dim::Symbol(table.Intern("h"));
  Attributes same_pad;
  same_pad.Set("pads", Ints{1, 1});
  // Stride 1, kernel 3, pads 1 + 1: h + 2 - 3 + 1 = h.
  auto d = WindowOutputDim(h, Window(same_pad, {3}), 0);
  REQUIRE(d.ok());
  CHECK(*d == std::optional<Dim>(h));
  // SAME with stride 2 over a symbol: ceil(h / 2) is not a polynomial, so no answer.
  Attributes strided;
  strided.Set("strides", Ints{2});
  strided.Set("auto_pad", std::string("SAME_UPPER"));
  auto none = WindowOutputDim(h, Window(strided, {3}), 0);
  REQUIRE(none.ok());
  CHECK_FALSE(none->has_value());
  // Constant inputs take the concrete path: ceil(225 / 2) = 113.
  CHECK(*WindowOutputDim(Dim(225), Window(strided, {3}), 0) == std::optional<Dim>(Dim(113)));
  // ConvTranspose, stride 2, kernel 3, pads 1 + 1, output_padding 1: 2 * (h - 1) + 1 + 3 - 2
  // = 2h; SAME: h * 2.
  Attributes t;
  t.Set("strides", Ints{2});
  t.Set("pads", Ints{1, 1});
  CHECK(TransposedWindowOutputDim(h, Window(t, {3}), 0, 1) == Dim(2) * h);
  CHECK(TransposedWindowOutputDim(h, Window(strided, {3}), 0, 0) == h * Dim(2));
}

}  // namespace
}  // namespace memplan
