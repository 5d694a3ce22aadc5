// The CPU reference kernel of memplan:ScaledDotProductAttention (runtime/cpu/kernels/sdpa.cc):
// forward against the eager formula softmax(scale * q k^T + mask) v computed here in double,
// backward against central differences (gradient_check.h), and what forward keeps besides its
// output: only the fp32 logsumexp [B, H, Sq] (and the RNG state under dropout), no S x S tensor.

#include <catch2/catch.hpp>

#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include "graph/ops/sdpa_op.h"
#include "tests/runtime/gradient_check.h"

namespace memplan::testing {
namespace {

GradCheckCase SdpaCase(TensorShape q, TensorShape k, TensorShape v, double scale) {
  GradCheckCase c;
  c.op = sdpa::kOpType;
  c.domain = sdpa::kDomain;
  c.attributes.Set(sdpa::kScale, scale);
  c.inputs = {RandomTensor(std::move(q), 11), RandomTensor(std::move(k), 12),
              RandomTensor(std::move(v), 13)};
  c.checked_inputs = {0, 1, 2};
  return c;
}

// softmax(scale * q k^T + additive mask [Sq, Sk] or none) v for 4D [B, H, S, D] with equal heads,
// in double: the eager sub-graph's arithmetic.
std::vector<double> EagerAttention(const Tensor& q, const Tensor& k, const Tensor& v, double scale,
                                   const std::vector<double>& mask) {
  const int64_t bh = q.dim(0) * q.dim(1), sq = q.dim(2), sk = k.dim(2), d = q.dim(3), dv = v.dim(3);
  std::vector<double> out(static_cast<size_t>(bh * sq * dv), 0.0);
  for (int64_t n = 0; n < bh; ++n) {
    for (int64_t i = 0; i < sq; ++i) {
      std::vector<double> s(static_cast<size_t>(sk));
      double max = -std::numeric_limits<double>::infinity();
      for (int64_t j = 0; j < sk; ++j) {
        double dot = 0.0;
        for (int64_t e = 0; e < d; ++e)
          dot +=
              static_cast<double>(q.data()[(n * sq + i) * d + e]) * k.data()[(n * sk + j) * d + e];
        s[static_cast<size_t>(j)] =
            dot * scale + (mask.empty() ? 0.0 : mask[static_cast<size_t>(i * sk + j)]);
        max = std::max(max, s[static_cast<size_t>(j)]);
      }
      double sum = 0.0;
      for (double& x : s) sum += (x = std::exp(x - max));
      for (int64_t j = 0; j < sk; ++j)
        for (int64_t e = 0; e < dv; ++e)
          out[static_cast<size_t>((n * sq + i) * dv + e)] +=
              s[static_cast<size_t>(j)] / sum * v.data()[(n * sk + j) * dv + e];
    }
  }
  return out;
}

ForwardResult Forward(const GradCheckCase& c) {
  KernelContext ctx;
  ctx.training = c.training;
  ctx.seed = 1234;
  ForwardArgs args;
  args.attributes = &c.attributes;
  args.inputs = c.inputs;
  args.num_outputs = 1;
  auto r = RunForward(c.op, ctx, args, c.domain);
  REQUIRE(r.ok());
  return std::move(r).value();
}

TEST_CASE("sdpa forward equals eager softmax(scale q k^T + mask) v", "[kernels]") {
  GradCheckCase c = SdpaCase({2, 2, 3, 4}, {2, 2, 5, 4}, {2, 2, 5, 3}, 0.5);
  std::vector<double> mask;
  SECTION("no mask") {}
  SECTION("causal by is_causal: key j > query i gets -inf") {
    c.attributes.Set(sdpa::kIsCausal, int64_t{1});
    for (int64_t i = 0; i < 3; ++i)
      for (int64_t j = 0; j < 5; ++j)
        mask.push_back(j > i ? -std::numeric_limits<double>::infinity() : 0.0);
  }
  SECTION("additive mask broadcast from [S, Sk]") {
    Tensor m = RandomTensor({3, 5}, 21);
    c.inputs.push_back(m);
    c.attributes.Set(sdpa::kMaskMode, std::string(sdpa::kMaskAdd));
    for (int64_t e = 0; e < m.numel(); ++e) mask.push_back(m.data()[e]);
  }
  const ForwardResult r = Forward(c);
  const std::vector<double> want = EagerAttention(c.inputs[0], c.inputs[1], c.inputs[2], 0.5, mask);
  const Tensor& y = r.outputs.at(0);
  REQUIRE(y.shape() == TensorShape{2, 2, 3, 3});
  for (int64_t e = 0; e < y.numel(); ++e)
    CHECK(y.data()[e] == Approx(want[static_cast<size_t>(e)]).margin(1e-6));
  // Kept for backward: logsumexp fp32 [B, H, Sq] and nothing else (no dropout here).
  REQUIRE(r.extras.size() == 1);
  CHECK(r.extras.at(sdpa::kLogSumExp).shape() == TensorShape{2, 2, 3});
  CHECK(r.extras.at(sdpa::kLogSumExp).dtype() == DType::kFloat32);
}

TEST_CASE("sdpa backward matches central differences", "[gradcheck]") {
  SECTION("4D, no mask") {
    MEMPLAN_REQUIRE_GRADIENTS_MATCH(SdpaCase({1, 2, 3, 4}, {1, 2, 3, 4}, {1, 2, 3, 5}, 0.5));
  }
  SECTION("key given transposed (the exporter's k^T)") {
    GradCheckCase c = SdpaCase({1, 2, 3, 4}, {1, 2, 4, 3}, {1, 2, 3, 2}, 0.5);
    c.attributes.Set(sdpa::kKeyTransposed, int64_t{1});
    MEMPLAN_REQUIRE_GRADIENTS_MATCH(c);
  }
  SECTION("grouped-query: 4 query heads over 2 kv heads") {
    MEMPLAN_REQUIRE_GRADIENTS_MATCH(SdpaCase({1, 4, 3, 4}, {1, 2, 3, 4}, {1, 2, 3, 4}, 0.5));
  }
  SECTION("causal keep-mask (Where) and additive mask") {
    GradCheckCase c = SdpaCase({1, 2, 4, 3}, {1, 2, 4, 3}, {1, 2, 4, 3}, 0.7);
    SECTION("keep") {
      // Causal, with row 0 fully masked (a padded query): its scores are all the fill, so q
      // and k get no gradient through it while v still does.
      c.inputs.push_back(Tensor::FromValues(
          {1, 1, 4, 4}, {0, 0, 0, 0, 1, 1, 0, 0, 1, 1, 1, 0, 1, 1, 1, 1}, DType::kBool));
      c.attributes.Set(sdpa::kMaskMode, std::string(sdpa::kMaskKeep));
      c.attributes.Set(sdpa::kMaskFill, static_cast<double>(std::numeric_limits<float>::lowest()));
    }
    SECTION("add") {
      c.inputs.push_back(RandomTensor({1, 1, 1, 4}, 31));
      c.attributes.Set(sdpa::kMaskMode, std::string(sdpa::kMaskAdd));
    }
    MEMPLAN_REQUIRE_GRADIENTS_MATCH(c);
  }
  SECTION("dropout regenerates the forward mask from the seed") {
    GradCheckCase c = SdpaCase({1, 2, 3, 4}, {1, 2, 3, 4}, {1, 2, 3, 4}, 0.5);
    c.attributes.Set(sdpa::kDropoutRatio, 0.3);
    MEMPLAN_REQUIRE_GRADIENTS_MATCH(c);
  }
  SECTION("3D with the heads folded into the batch, folded scale divisor") {
    GradCheckCase c = SdpaCase({2, 3, 4}, {2, 3, 4}, {2, 3, 4}, 1.0);
    c.inputs.push_back(Tensor());                        // no mask
    c.inputs.push_back(Tensor());                        // no multiplier
    c.inputs.push_back(Tensor::FromValues({}, {2.0f}));  // divided by 2
    MEMPLAN_REQUIRE_GRADIENTS_MATCH(c);
  }
}

// [B, H, S, D] -> [B, S, H*D]: the packed layout of the same heads.
Tensor Packed(const Tensor& t) {
  const int64_t b = t.dim(0), h = t.dim(1), s = t.dim(2), d = t.dim(3);
  std::vector<float> values(static_cast<size_t>(t.numel()));
  for (int64_t n = 0; n < b; ++n)
    for (int64_t hh = 0; hh < h; ++hh)
      for (int64_t i = 0; i < s; ++i)
        for (int64_t e = 0; e < d; ++e)
          values[static_cast<size_t>(((n * s + i) * h + hh) * d + e)] =
              t.data()[((n * h + hh) * s + i) * d + e];
  return Tensor::FromValues({b, s, h * d}, values);
}

TEST_CASE("sdpa 3D packed heads equal the 4D heads laid out [B, S, H*D]", "[kernels]") {
  // Grouped-query (4 query heads over 2 kv heads), causal, v heads wider than q heads: the
  // packed run must give the 4D run's output and logsumexp, element for element.
  GradCheckCase four_d = SdpaCase({2, 4, 3, 2}, {2, 2, 5, 2}, {2, 2, 5, 3}, 0.5);
  four_d.attributes.Set(sdpa::kIsCausal, int64_t{1});
  GradCheckCase packed = four_d;
  packed.attributes.Set(sdpa::kHeadSize, int64_t{2});
  for (Tensor& t : packed.inputs) t = Packed(t);
  const ForwardResult want = Forward(four_d);
  const ForwardResult got = Forward(packed);
  const Tensor want_y = Packed(want.outputs.at(0));
  REQUIRE(got.outputs.at(0).shape() == TensorShape{2, 3, 12});
  for (int64_t e = 0; e < want_y.numel(); ++e)
    CHECK(got.outputs.at(0).data()[e] == want_y.data()[e]);
  const Tensor& lse = got.extras.at(sdpa::kLogSumExp);
  REQUIRE(lse.shape() == TensorShape{2, 4, 3});
  for (int64_t e = 0; e < lse.numel(); ++e)
    CHECK(lse.data()[e] == want.extras.at(sdpa::kLogSumExp).data()[e]);
}

TEST_CASE("sdpa 3D packed backward matches central differences", "[gradcheck]") {
  // 2 query heads over 1 kv head, head_size 2, additive mask [Sq, Sk].
  GradCheckCase c = SdpaCase({1, 3, 4}, {1, 4, 2}, {1, 4, 6}, 0.7);
  c.attributes.Set(sdpa::kHeadSize, int64_t{2});
  c.inputs.push_back(RandomTensor({3, 4}, 41));
  c.attributes.Set(sdpa::kMaskMode, std::string(sdpa::kMaskAdd));
  MEMPLAN_REQUIRE_GRADIENTS_MATCH(c);
}

TEST_CASE("sdpa under dropout keeps the RNG state beside logsumexp", "[kernels]") {
  GradCheckCase c = SdpaCase({1, 2, 3, 4}, {1, 2, 3, 4}, {1, 2, 3, 4}, 0.5);
  c.attributes.Set(sdpa::kDropoutRatio, 0.3);
  const ForwardResult r = Forward(c);
  REQUIRE(r.extras.size() == 2);
  CHECK(r.extras.at(sdpa::kRngState).shape() == TensorShape{2});
}

}  // namespace
}  // namespace memplan::testing
