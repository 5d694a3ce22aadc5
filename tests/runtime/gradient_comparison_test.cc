// How `verify` compares two sets of gradients (runtime/verification.h): per parameter, at no
// finer a scale than a floor set by the largest gradient, within a bound that grows with the
// number of samples summed. Numbers by hand.

#include <catch2/catch.hpp>
#include <cmath>
#include <vector>

#include "runtime/verification.h"

namespace memplan {
namespace {

TEST_CASE("gradient comparison: a parameter is compared at its own scale", "[verify]") {
  // max|a - b| = 0.003 on a parameter whose largest gradient is 3: 1e-3.
  const std::vector<std::vector<float>> a = {{1.0f, -3.003f}, {0.5f}};
  const std::vector<std::vector<float>> b = {{1.0f, -3.0f}, {0.5f}};
  CHECK(MaxRelativeError(a, b) == Approx(1e-3).epsilon(1e-3));
  CHECK(MaxRelativeError(b, b) == 0.0);
}

TEST_CASE(
    "gradient comparison: roundoff of a gradient that is zero in exact arithmetic is "
    "compared at the noise floor",
    "[verify]") {
  // Like BERT's key biases: 1e-10 against a largest gradient of 2, with the opposite sign in the
  // other run. Without the floor this is 2e-10 / 1e-10 = 2; with it 2e-10 / (1e-4 * 2) = 1e-6.
  const std::vector<std::vector<float>> a = {{2.0f, 0.25f}, {1e-10f, 0.0f}};
  const std::vector<std::vector<float>> b = {{2.0f, 0.25f}, {-1e-10f, 0.0f}};
  CHECK(MaxRelativeError(a, b) == Approx(1e-6).epsilon(1e-3));
  // A wrong small gradient still fails: 1e-3 where the other run has 0 is 1e-3 / 2e-4 = 5.
  const std::vector<std::vector<float>> wrong = {{2.0f, 0.25f}, {1e-3f, 0.0f}};
  const std::vector<std::vector<float>> zero = {{2.0f, 0.25f}, {0.0f, 0.0f}};
  CHECK(MaxRelativeError(wrong, zero) == Approx(5.0).epsilon(1e-3));
  // Every gradient zero in one run and not in the other: no scale at all.
  CHECK(std::isinf(MaxRelativeError({{1.0f}}, {{0.0f}})));
  CHECK(std::isinf(MaxRelativeError({{1.0f, 2.0f}}, {{1.0f}})));
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
