// Host-side index math of the CUDA layout and convolution kernels (plain C++, runs without a
// GPU). Expected offsets are derived by hand in the comments.

#include <catch2/catch.hpp>
#include <vector>

#include "runtime/cuda/kernels/conv_kernels.h"
#include "runtime/cuda/kernels/layout_kernels.h"

namespace memplan::cuda {
namespace {

// Every (src, dst) offset pair of a geometry, in block order.
std::vector<std::pair<int64_t, int64_t>> Offsets(const StridedCopyGeometry& g) {
  std::vector<std::pair<int64_t, int64_t>> out;
  for (int64_t i = 0; i < CopyCount(g); ++i) {
    int64_t s = 0, d = 0;
    StridedOffsets(g, i, s, d);
    out.emplace_back(s, d);
  }
  return out;
}

TEST_CASE("contiguous strides are row-major", "[cuda]") {
  CHECK(ContiguousStrides({2, 3, 4}) == TensorShape{12, 4, 1});
  CHECK(ContiguousStrides({}).empty());
}

TEST_CASE("transpose geometry reads the input through permuted strides", "[cuda]") {
  // in [2, 3] (strides 3, 1), perm {1, 0}: out [3, 2]; out[i][j] = in[j][i] at 3j + i.
  auto g = TransposeGeometry({2, 3}, {1, 0});
  REQUIRE(g.ok());
  const std::vector<std::pair<int64_t, int64_t>> expected{{0, 0}, {3, 1}, {1, 2},
                                                          {4, 3}, {2, 4}, {5, 5}};
  CHECK(Offsets(*g) == expected);
  CHECK_FALSE(TransposeGeometry({2, 3}, {0, 0}).ok());
  CHECK_FALSE(TransposeGeometry({2, 3}, {0}).ok());
}

TEST_CASE("block geometry maps a slice both ways", "[cuda]") {
  // whole [4, 5]; block rows 1..2 (2 rows), cols 0, 2, 4 (step 2): whole offset 5r + c.
  auto into = BlockGeometry({4, 5}, {1, 0}, {1, 2}, {2, 3}, /*into_block=*/true);
  REQUIRE(into.ok());
  const std::vector<std::pair<int64_t, int64_t>> expected{{5, 0},  {7, 1},  {9, 2},
                                                          {10, 3}, {12, 4}, {14, 5}};
  CHECK(Offsets(*into) == expected);
  auto back = BlockGeometry({4, 5}, {1, 0}, {1, 2}, {2, 3}, /*into_block=*/false);
  REQUIRE(back.ok());
  for (auto& [s, d] : Offsets(*back)) CHECK(d == Offsets(*into)[static_cast<size_t>(s)].first);
  // Row 3 + 2 rows leaves the tensor.
  CHECK_FALSE(BlockGeometry({4, 5}, {3, 0}, {1, 1}, {2, 5}, true).ok());
}

TEST_CASE("expand geometry gives broadcast axes stride 0", "[cuda]") {
  // in [3, 1] to out [2, 3, 4]: out[a][b][c] reads in[b] (stride 1 on b, 0 elsewhere).
  auto g = ExpandGeometry({3, 1}, {2, 3, 4});
  REQUIRE(g.ok());
  CHECK(g->src_strides[0] == 0);
  CHECK(g->src_strides[1] == 1);
  CHECK(g->src_strides[2] == 0);
  int64_t s = 0, d = 0;
  StridedOffsets(*g, 23, s, d);  // out [1][2][3] = flat 12 + 8 + 3
  CHECK(s == 2);
  CHECK(d == 23);
  CHECK_FALSE(ExpandGeometry({3}, {2, 4}).ok());
}

TEST_CASE("where geometry broadcasts all three operands", "[cuda]") {
  TensorShape out;
  auto g = MakeWhereGeometry({1, 4}, {3, 1}, {}, out);
  REQUIRE(g.ok());
  CHECK(out == TensorShape{3, 4});
  CHECK(g->strides[0][0] == 0);  // condition repeats over rows
  CHECK(g->strides[0][1] == 1);
  CHECK(g->strides[1][0] == 1);  // x repeats over columns
  CHECK(g->strides[1][1] == 0);
  CHECK(g->strides[2][0] == 0);  // scalar y
}

TEST_CASE("2-D window output size and im2col sources", "[cuda]") {
  // ResNet's stem: 224x224, 7x7, stride 2, pad 3: (224 + 6 - 7) / 2 + 1 = 112.
  Window2d stem;
  stem.channels = 3;
  stem.in_h = stem.in_w = 224;
  stem.kernel_h = stem.kernel_w = 7;
  stem.stride_h = stem.stride_w = 2;
  stem.pad_top = stem.pad_left = stem.pad_bottom = stem.pad_right = 3;
  CHECK(stem.out_h() == 112);
  CHECK(stem.out_w() == 112);
  CHECK(stem.col_rows() == 3 * 49);

  // 1 channel 3x3, kernel 2x2, stride 1, pad 1 on every side: out (3 + 2 - 2) + 1 = 4 per axis.
  Window2d w;
  w.channels = 1;
  w.in_h = w.in_w = 3;
  w.kernel_h = w.kernel_w = 2;
  w.pad_top = w.pad_left = w.pad_bottom = w.pad_right = 1;
  REQUIRE(w.out_h() == 4);
  // Row 0 = kernel (0, 0); column 0 = output (0, 0): input (-1, -1) is padding.
  CHECK(w.SourceOffset(0, 0) == -1);
  // Row 3 = kernel (1, 1); column 0: input (0, 0) -> offset 0.
  CHECK(w.SourceOffset(3, 0) == 0);
  // Row 3, column 5 = output (1, 1): input (1, 1) -> 1 * 3 + 1 = 4.
  CHECK(w.SourceOffset(3, 5) == 4);
  // Row 0, column 15 = output (3, 3): input (2, 2) -> 8.
  CHECK(w.SourceOffset(0, 15) == 8);
  // Row 3, column 15: input (3, 3) is padding.
  CHECK(w.SourceOffset(3, 15) == -1);
}

TEST_CASE("2-D windows come from the shared geometry, auto_pad included", "[cuda]") {
  using Ints = std::vector<int64_t>;
  Attributes same;
  same.Set("strides", Ints{2, 2});
  same.Set("auto_pad", std::string("SAME_UPPER"));
  // H 7, kernel 4, stride 2: out ceil(7 / 2) = 4, total pad (4 - 1) * 2 + 4 - 7 = 3 -> 1 + 2.
  // W 8, kernel 3: out 4, total pad 3 * 2 + 3 - 8 = 1 -> 0 + 1.
  auto w = MakeWindow2d("Conv", same, {1, 2, 7, 8}, {4, 3}, /*read_ceil_mode=*/false);
  REQUIRE(w.ok());
  CHECK(w->out_h() == 4);
  CHECK(w->out_w() == 4);
  CHECK(w->pad_top == 1);
  CHECK(w->pad_bottom == 2);
  CHECK(w->pad_left == 0);
  CHECK(w->pad_right == 1);
  // MaxPool 3x3 stride 2 with ceil_mode on 6x6: ceil((6 - 3) / 2) + 1 = 3 per axis.
  Attributes ceil;
  ceil.Set("strides", Ints{2, 2});
  ceil.Set("ceil_mode", int64_t{1});
  auto pool = MakeWindow2d("MaxPool", ceil, {1, 1, 6, 6}, {3, 3}, /*read_ceil_mode=*/true);
  REQUIRE(pool.ok());
  CHECK(pool->out_h() == 3);
  // A 5x5 kernel does not fit a 3x3 input without padding.
  CHECK_FALSE(MakeWindow2d("Conv", Attributes(), {1, 1, 3, 3}, {5, 5}, false).ok());
}

}  // namespace
}  // namespace memplan::cuda
