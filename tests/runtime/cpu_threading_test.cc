// The CPU backend's threaded kernels: fixed chunks give bitwise-repeatable GEMMs and
// convolutions, every chunk lands where it belongs, and im2col convolution matches a tiny
// convolution worked out by hand.

#include <catch2/catch.hpp>

#include <atomic>
#include <cstring>
#include <vector>

#include "runtime/cpu/kernel_registry.h"
#include "runtime/cpu/kernels/gemm_core.h"
#include "runtime/cpu/parallel_for.h"
#include "tests/runtime/gradient_check.h"

namespace memplan::testing {
namespace {

std::vector<float> RandomValues(int64_t count, uint32_t seed) {
  const Tensor t = RandomTensor({count}, seed);
  return std::vector<float>(t.data(), t.data() + count);
}

bool BitwiseEqual(const float* a, const float* b, int64_t count) {
  return std::memcmp(a, b, static_cast<size_t>(count) * sizeof(float)) == 0;
}

TEST_CASE("ParallelFor visits every item once, in the fixed chunks", "[kernels][threads]") {
  // 10 items in chunks of 4: [0,4) [4,8) [8,10), whatever the thread count.
  std::vector<std::atomic<int>> visits(10);
  std::vector<std::atomic<int64_t>> chunk_end(10);
  ParallelFor(10, 4, [&](int64_t begin, int64_t end) {
    chunk_end[static_cast<size_t>(begin)] = end;
    for (int64_t i = begin; i < end; ++i) ++visits[static_cast<size_t>(i)];
  });
  for (const auto& v : visits) CHECK(v == 1);
  CHECK(chunk_end[0] == 4);
  CHECK(chunk_end[4] == 8);
  CHECK(chunk_end[8] == 10);
  CHECK(CpuThreadCount() >= 1);
}

TEST_CASE("threaded GEMM is bitwise repeatable and matches the definition", "[kernels][threads]") {
  // 2·M·N·K = 2·96·640·300 ≈ 3.7e7 flops, above the 2^24 per chunk, so the call is split
  // (along N here, along M when M > N below) and runs on the pool.
  for (const bool trans_a : {false, true}) {
    for (const bool trans_b : {false, true}) {
      for (const bool tall : {false, true}) {
        const int64_t m = tall ? 640 : 96, n = tall ? 96 : 640, k = 300;
        INFO("trans_a=" << trans_a << " trans_b=" << trans_b << " m=" << m << " n=" << n);
        const std::vector<float> a = RandomValues(m * k, 1), b = RandomValues(k * n, 2);
        const std::vector<float> c0 = RandomValues(m * n, 3);
        std::vector<float> first = c0, second = c0;
        GemmAccumulate(trans_a, trans_b, m, n, k, 0.5f, a.data(), b.data(), first.data());
        GemmAccumulate(trans_a, trans_b, m, n, k, 0.5f, a.data(), b.data(), second.data());
        CHECK(BitwiseEqual(first.data(), second.data(), m * n));
        // Definition in double: C = C0 + 0.5 op(A) op(B). Values in [-1,1) and K = 300 give
        // |C| up to ~10 with float rounding ~1e-5, so 1e-4 absolute only passes a right index.
        double worst = 0.0;
        for (int64_t i = 0; i < m; ++i) {
          for (int64_t j = 0; j < n; ++j) {
            double sum = 0.0;
            for (int64_t p = 0; p < k; ++p) {
              const float av = trans_a ? a[p * m + i] : a[i * k + p];
              const float bv = trans_b ? b[j * k + p] : b[p * n + j];
              sum += static_cast<double>(av) * bv;
            }
            const double expected = c0[i * n + j] + 0.5 * sum;
            worst = std::max(worst, std::abs(expected - first[i * n + j]));
          }
        }
        CHECK(worst < 1e-4);
      }
    }
  }
}

ForwardResult ConvForwardOf(const std::vector<Tensor>& inputs, const Attributes& attrs) {
  ForwardArgs args;
  args.attributes = &attrs;
  args.inputs = inputs;
  auto result = RunForward("Conv", KernelContext(), args);
  if (!result.ok()) FAIL(result.error().message);
  return *result;
}

InputGradients ConvBackwardOf(const std::vector<Tensor>& inputs, const Attributes& attrs,
                              const Tensor& dy) {
  BackwardArgs args;
  args.attributes = &attrs;
  args.inputs = inputs;
  args.grad_outputs = {dy};
  for (const Tensor& t : inputs) {
    args.input_shapes.push_back(t.shape());
    args.input_dtypes.push_back(t.dtype());
  }
  auto result = RunBackward("Conv", KernelContext(), args);
  if (!result.ok()) FAIL(result.error().message);
  return *result;
}

TEST_CASE("threaded convolution is bitwise repeatable", "[kernels][threads]") {
  // A ResNet-like 3x3 conv with padding: 2·(32·9)·32·(28·28) ≈ 1.4e7 flops per image, im2col
  // and col2im rows split across the pool.
  Attributes attrs;
  attrs.Set("pads", std::vector<int64_t>{1, 1, 1, 1});
  const std::vector<Tensor> inputs = {RandomTensor({2, 32, 28, 28}, 4),
                                      RandomTensor({32, 32, 3, 3}, 5), RandomTensor({32}, 6)};
  const Tensor dy = RandomTensor({2, 32, 28, 28}, 7);
  const ForwardResult y1 = ConvForwardOf(inputs, attrs), y2 = ConvForwardOf(inputs, attrs);
  CHECK(BitwiseEqual(y1.outputs[0].data(), y2.outputs[0].data(), y1.outputs[0].numel()));
  const InputGradients g1 = ConvBackwardOf(inputs, attrs, dy);
  const InputGradients g2 = ConvBackwardOf(inputs, attrs, dy);
  for (size_t i = 0; i < 3; ++i) {
    INFO("gradient of input " << i);
    REQUIRE(g1[i].defined());
    CHECK(BitwiseEqual(g1[i].data(), g2[i].data(), g1[i].numel()));
  }
}

TEST_CASE("im2col convolution matches a convolution worked by hand", "[kernels]") {
  // x = [[1,2,3],[4,5,6],[7,8,9]], w = [[1,0],[0,1]]: each output adds an element and its
  // lower-right neighbour.
  const Tensor x = Tensor::FromValues({1, 1, 3, 3}, {1, 2, 3, 4, 5, 6, 7, 8, 9});
  const Tensor w = Tensor::FromValues({1, 1, 2, 2}, {1, 0, 0, 1});
  const Tensor bias = Tensor::FromValues({1}, {0.5f});
  SECTION("no padding, stride 1, with bias") {
    // y = [[1+5, 2+6], [4+8, 5+9]] + 0.5.
    const Attributes attrs;
    const ForwardResult y = ConvForwardOf({x, w, bias}, attrs);
    CHECK(y.outputs[0].shape() == TensorShape{1, 1, 2, 2});
    CHECK(y.outputs[0].ToVector() == std::vector<float>{6.5f, 8.5f, 12.5f, 14.5f});
    // dy = ones: dX counts the outputs reading each input through a weight of 1 (corners read
    // once by one tap, the centre by both): [[1,1,0],[1,2,1],[0,1,1]]. dW[kh][kw] sums the
    // inputs under that tap: (0,0) 1+2+4+5 = 12, (0,1) 2+3+5+6 = 16, (1,0) 4+5+7+8 = 24,
    // (1,1) 5+6+8+9 = 28. dB = 4 outputs.
    const InputGradients g =
        ConvBackwardOf({x, w, bias}, attrs, Tensor::FromValues({1, 1, 2, 2}, {1, 1, 1, 1}));
    CHECK(g[0].ToVector() == std::vector<float>{1, 1, 0, 1, 2, 1, 0, 1, 1});
    CHECK(g[1].ToVector() == std::vector<float>{12, 16, 24, 28});
    CHECK(g[2].ToVector() == std::vector<float>{4});
  }
  SECTION("padding 1, stride 2") {
    // Output side (3 + 2 - 2) / 2 + 1 = 2. With xp the padded input (xp[r][c] = x[r-1][c-1]),
    // y[i][j] = xp[2i][2j] + xp[2i+1][2j+1]: the first term is padding except at (1,1), so
    // y = [[x00, x02], [x20, x11 + x22]] = [[1, 3], [7, 5 + 9]].
    Attributes attrs;
    attrs.Set("pads", std::vector<int64_t>{1, 1, 1, 1});
    attrs.Set("strides", std::vector<int64_t>{2, 2});
    const ForwardResult y = ConvForwardOf({x, w}, attrs);
    CHECK(y.outputs[0].ToVector() == std::vector<float>{1, 3, 7, 14});
    // dy = [[1,2],[3,4]]: x00 gets 1, x02 gets 2, x20 gets 3, x11 and x22 get 4.
    const InputGradients g =
        ConvBackwardOf({x, w}, attrs, Tensor::FromValues({1, 1, 2, 2}, {1, 2, 3, 4}));
    CHECK(g[0].ToVector() == std::vector<float>{1, 0, 2, 0, 4, 0, 3, 0, 4});
    // dW(0,0) = 4·x11 = 20 (the only in-range first tap); dW(1,1) = 1·1 + 2·3 + 3·7 + 4·9 = 64;
    // tap (0,1) reads xp[2i][2j+1], in range only for i = 1: 3·x10 + 4·x12 = 12 + 24 = 36;
    // tap (1,0) reads xp[2i+1][2j], in range only for j = 1: 2·x01 + 4·x21 = 4 + 32 = 36.
    CHECK(g[1].ToVector() == std::vector<float>{20, 36, 36, 64});
  }
}

}  // namespace
}  // namespace memplan::testing
