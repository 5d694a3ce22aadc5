// Dynamic loss scaling state transitions (torch.cuda.amp.GradScaler's rules).

#include <catch2/catch.hpp>

#include <cmath>
#include <limits>

#include "runtime/loss_scaler.h"
#include "runtime/precision_emulation.h"

namespace memplan {
namespace {

TEST_CASE("the scale grows after growth_interval clean steps", "[optimizer]") {
  DynamicLossScaler scaler;
  CHECK(scaler.scale() == 65536.0f);
  for (int i = 0; i < 1999; ++i) REQUIRE(scaler.Update(/*found_inf=*/false));
  CHECK(scaler.scale() == 65536.0f);
  CHECK(scaler.growth_tracker() == 1999);
  CHECK(scaler.Update(false));  // the 2000th clean step
  CHECK(scaler.scale() == 131072.0f);
  CHECK(scaler.growth_tracker() == 0);
}

TEST_CASE("an overflow skips the step, halves the scale and restarts the count", "[optimizer]") {
  LossScalerOptions options;
  options.growth_interval = 3;
  DynamicLossScaler scaler(options);
  CHECK(scaler.Update(false));
  CHECK(scaler.Update(false));
  CHECK_FALSE(scaler.Update(/*found_inf=*/true));  // skipped
  CHECK(scaler.scale() == 32768.0f);
  CHECK(scaler.growth_tracker() == 0);
  CHECK(scaler.Update(false));
  CHECK(scaler.Update(false));
  CHECK(scaler.scale() == 32768.0f);  // only 2 clean steps since the backoff
  CHECK(scaler.Update(false));
  CHECK(scaler.scale() == 65536.0f);
}

TEST_CASE("unscaling divides by the scale and detects inf/NaN", "[optimizer]") {
  DynamicLossScaler scaler;
  SECTION("clean gradients") {
    const Tensor g = Tensor::FromValues({2}, {65536.0f, -32768.0f});
    CHECK_FALSE(scaler.UnscaleAndCheck({g, Tensor()}));
    CHECK(g.ToVector() == std::vector<float>{1.0f, -0.5f});
  }
  SECTION("an fp16 gradient that overflowed") {
    // A true gradient of 2 scaled by 65536 is 131072, beyond fp16's 65504: it becomes inf.
    const Tensor g =
        Tensor::FromValues({2}, {RoundToFloat16(2.0f * 65536.0f), 1.0f}, DType::kFloat16);
    CHECK(scaler.UnscaleAndCheck({g}));
    CHECK_FALSE(scaler.Update(true));
    // At the halved scale 32768 the scaled gradient is 65536, still past fp16's 65520 cut-off:
    // another overflow and backoff. At 16384 it is 32768, which fp16 holds.
    CHECK(scaler.scale() == 32768.0f);
    CHECK(std::isinf(RoundToFloat16(2.0f * scaler.scale())));
    CHECK_FALSE(scaler.Update(true));
    CHECK(scaler.scale() == 16384.0f);
    CHECK(RoundToFloat16(2.0f * scaler.scale()) == 32768.0f);
  }
  SECTION("NaN") {
    const Tensor g = Tensor::FromValues({1}, {std::numeric_limits<float>::quiet_NaN()});
    CHECK(scaler.UnscaleAndCheck({g}));
  }
}

}  // namespace
}  // namespace memplan
