// How `verify` compares two sets of gradients (runtime/verification.h): per parameter, at no
// finer a scale than a floor set by the largest gradient (one unit roundoff of it at the bound),
// within a bound that grows with the number of samples summed. Numbers by hand.

#include <catch2/catch.hpp>
#include <cmath>
#include <vector>

#include "runtime/verification.h"

namespace memplan {
namespace {

// The fp32 floor: 2^-24 / 1e-5 = 5.9605e-3 of the largest gradient.
const double kFp32Floor = GradientNoiseFloor(Precision::kFp32);

TEST_CASE("gradient comparison: a parameter is compared at its own scale", "[verify]") {
  // max|a - b| = 0.003 on a parameter whose largest gradient is 3 (above the floor, 0.018): 1e-3.
  const std::vector<std::vector<float>> a = {{1.0f, -3.003f}, {0.5f}};
  const std::vector<std::vector<float>> b = {{1.0f, -3.0f}, {0.5f}};
  CHECK(MaxRelativeError(a, b, kFp32Floor) == Approx(1e-3).epsilon(1e-3));
  CHECK(MaxRelativeError(b, b, kFp32Floor) == 0.0);
}

TEST_CASE("gradient comparison: the noise floor allows one unit roundoff of the largest gradient",
          "[verify]") {
  CHECK(kFp32Floor == Approx(std::ldexp(1.0, -24) / 1e-5).epsilon(1e-12));
  CHECK(GradientNoiseFloor(Precision::kBf16) == Approx(std::ldexp(1.0, -8) / 5e-2).epsilon(1e-12));
  CHECK(GradientNoiseFloor(Precision::kFp16) == Approx(std::ldexp(1.0, -11) / 1e-2).epsilon(1e-12));
  // At the floor the bound is exactly one unit roundoff of the largest gradient L:
  // EquivalenceBound * floor * L = 2^-24 * L.
  CHECK(EquivalenceBound(Precision::kFp32) * kFp32Floor == Approx(std::ldexp(1.0, -24)));
}

TEST_CASE(
    "gradient comparison: roundoff of a gradient that is zero in exact arithmetic is "
    "compared at the noise floor",
    "[verify]") {
  // Like BERT's key biases: 1e-10 against a largest gradient of 2, with the opposite sign in the
  // other run. Without the floor this is 2e-10 / 1e-10 = 2; with it 2e-10 / (5.9605e-3 * 2) =
  // 1.6777e-8.
  const std::vector<std::vector<float>> a = {{2.0f, 0.25f}, {1e-10f, 0.0f}};
  const std::vector<std::vector<float>> b = {{2.0f, 0.25f}, {-1e-10f, 0.0f}};
  CHECK(MaxRelativeError(a, b, kFp32Floor) == Approx(2e-10 / (kFp32Floor * 2)).epsilon(1e-3));
  // OPT's layer-1 key bias in `verify` (docs/measurements.md): runs 1.819e-9 apart on a gradient
  // of at most 1.634e-9, the largest gradient 1.566. 1.819e-9 / (5.9605e-3 * 1.566) = 1.949e-7,
  // within 1e-5 (a floor of 1e-4 gave 1.16e-5, a failure).
  const std::vector<std::vector<float>> opt_split = {{1.566f}, {1.634e-9f + 1.819e-9f}};
  const std::vector<std::vector<float>> opt_whole = {{1.566f}, {1.634e-9f}};
  CHECK(MaxRelativeError(opt_split, opt_whole, kFp32Floor) == Approx(1.949e-7).epsilon(2e-3));
  CHECK(MaxRelativeError(opt_split, opt_whole, 1e-4) > 1e-5);
  // A wrong small gradient still fails: 1e-3 where the other run has 0 is 1e-3 / (5.9605e-3 * 2)
  // = 0.0839.
  const std::vector<std::vector<float>> wrong = {{2.0f, 0.25f}, {1e-3f, 0.0f}};
  const std::vector<std::vector<float>> zero = {{2.0f, 0.25f}, {0.0f, 0.0f}};
  CHECK(MaxRelativeError(wrong, zero, kFp32Floor) == Approx(0.0838861).epsilon(1e-4));
  // Every gradient zero in one run and not in the other: no scale at all.
  CHECK(std::isinf(MaxRelativeError({{1.0f}}, {{0.0f}}, kFp32Floor)));
  CHECK(std::isinf(MaxRelativeError({{1.0f, 2.0f}}, {{1.0f}}, kFp32Floor)));
}

TEST_CASE("gradient comparison: the summation bound grows as the square root of the samples",
          "[verify]") {
  // Up to 8 samples the per-precision bound itself; 800 samples: sqrt(100) = 10 times it.
  CHECK(SummationBound(Precision::kFp32, 1) == 1e-5);
  CHECK(SummationBound(Precision::kFp32, 8) == 1e-5);
  CHECK(SummationBound(Precision::kFp32, 800) == Approx(1e-4).epsilon(1e-12));
  CHECK(SummationBound(Precision::kBf16, 32) == Approx(0.1).epsilon(1e-12));
}

}  // namespace
}  // namespace memplan
