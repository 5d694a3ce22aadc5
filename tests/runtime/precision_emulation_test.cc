// fp16 / bf16 rounding on known bit patterns (IEEE 754 binary16 and bfloat16 encodings).

#include <catch2/catch.hpp>

#include <cmath>
#include <limits>

#include "runtime/precision_emulation.h"

namespace memplan {
namespace {

float Pow2(int e) { return std::ldexp(1.0f, e); }

TEST_CASE("fp16 encodings of exact values", "[kernels]") {
  CHECK(FloatToHalfBits(1.0f) == 0x3C00);
  CHECK(FloatToHalfBits(-2.0f) == 0xC000);
  CHECK(FloatToHalfBits(-0.0f) == 0x8000);
  CHECK(FloatToHalfBits(65504.0f) == 0x7BFF);  // largest finite fp16
  CHECK(HalfBitsToFloat(0x7BFF) == 65504.0f);
  CHECK(FloatToHalfBits(1.0f + Pow2(-10)) == 0x3C01);  // 1 + one ulp is representable
  CHECK(FloatToHalfBits(Pow2(-14)) == 0x0400);         // smallest normal
  CHECK(FloatToHalfBits(Pow2(-24)) == 0x0001);         // smallest subnormal
  CHECK(FloatToHalfBits(1023 * Pow2(-24)) == 0x03FF);  // largest subnormal
  CHECK(HalfBitsToFloat(0x0001) == Pow2(-24));
  CHECK(HalfBitsToFloat(0x03FF) == 1023 * Pow2(-24));
}

TEST_CASE("fp16 rounds to nearest, ties to even", "[kernels]") {
  // 1 + 2^-11 is halfway between 1 (even mantissa 0) and 1 + 2^-10 (odd): rounds down to 1.
  CHECK(RoundToFloat16(1.0f + Pow2(-11)) == 1.0f);
  // 1 + 3 * 2^-11 is halfway between mantissas 1 and 2: rounds up to the even one, 1 + 2^-9.
  CHECK(RoundToFloat16(1.0f + 3 * Pow2(-11)) == 1.0f + Pow2(-9));
  // Just above the midpoint rounds up.
  CHECK(RoundToFloat16(1.0f + Pow2(-11) + Pow2(-20)) == 1.0f + Pow2(-10));
  // 0.1 becomes 0x2E66 = 1638 / 16384 = 0.0999755859375.
  CHECK(FloatToHalfBits(0.1f) == 0x2E66);
  CHECK(RoundToFloat16(0.1f) == 0.0999755859375f);
  // Mantissa carry into the exponent: 2047.9 -> 2048 (fp16 spacing at [1024, 2048) is 1).
  CHECK(RoundToFloat16(2047.9f) == 2048.0f);
}

TEST_CASE("fp16 overflows to infinity past the midpoint above 65504", "[kernels]") {
  // Between 65504 (mantissa 0x3FF, odd) and 2^16 the midpoint is 65520: below stays finite,
  // the tie goes to the even encoding, which is infinity.
  CHECK(FloatToHalfBits(65519.99f) == 0x7BFF);
  CHECK(FloatToHalfBits(65520.0f) == 0x7C00);
  CHECK(FloatToHalfBits(1e6f) == 0x7C00);
  CHECK(FloatToHalfBits(-1e6f) == 0xFC00);
  CHECK(std::isinf(RoundToFloat16(70000.0f)));
  CHECK(FloatToHalfBits(std::numeric_limits<float>::infinity()) == 0x7C00);
  CHECK(std::isnan(RoundToFloat16(std::numeric_limits<float>::quiet_NaN())));
}

TEST_CASE("fp16 subnormals round to multiples of 2^-24, ties to even", "[kernels]") {
  CHECK(RoundToFloat16(Pow2(-25)) == 0.0f);               // tie between 0 and 2^-24
  CHECK(RoundToFloat16(1.5f * Pow2(-25)) == Pow2(-24));   // above the tie
  CHECK(RoundToFloat16(3 * Pow2(-25)) == 2 * Pow2(-24));  // 1.5 ulp ties to 2
  CHECK(FloatToHalfBits(1023.5f * Pow2(-24)) == 0x0400);  // ties up into the normals
  CHECK(RoundToFloat16(1e-8f) == 0.0f);                   // below half the smallest
  CHECK(std::signbit(RoundToFloat16(-1e-8f)));            // keeps the sign of zero
}

TEST_CASE("bf16 keeps fp32's exponent and 7 mantissa bits", "[kernels]") {
  CHECK(FloatToBFloat16Bits(1.0f) == 0x3F80);
  CHECK(FloatToBFloat16Bits(1.0f + Pow2(-7)) == 0x3F81);  // one bf16 ulp is exact
  // 1.00390625 = 1 + 2^-8 is the midpoint between 1 and 1 + 2^-7: ties to even, 1.
  CHECK(RoundToBFloat16(1.00390625f) == 1.0f);
  // 1.01171875 = 1 + 3 * 2^-8: midpoint between mantissas 1 and 2, ties to even 1.015625.
  CHECK(RoundToBFloat16(1.01171875f) == 1.015625f);
  CHECK(RoundToBFloat16(1.0f + Pow2(-8) + Pow2(-16)) == 1.0f + Pow2(-7));  // above the tie
  // fp32's largest finite value rounds up past bf16's largest (0x7F7F) into infinity.
  CHECK(FloatToBFloat16Bits(std::numeric_limits<float>::max()) == 0x7F80);
  CHECK(BFloat16BitsToFloat(0x7F7F) == 3.38953139e38f);
  // 1e6 fits (the exponent range is fp32's): 1e6 = 0x49742400 -> 0x4974 = 999424.
  CHECK(RoundToBFloat16(1e6f) == 999424.0f);
  // 2^-130 is the fp32 subnormal 0x00080000 (2^-126 = 0x00800000 shifted right 4): exact in bf16.
  CHECK(FloatToBFloat16Bits(Pow2(-130)) == 0x0008);
  CHECK(std::isnan(RoundToBFloat16(std::numeric_limits<float>::quiet_NaN())));
}

TEST_CASE("RoundToDType handles integer and bool targets", "[kernels]") {
  CHECK(RoundToDType(-2.7f, DType::kInt64) == -2.0f);
  CHECK(RoundToDType(2.7f, DType::kInt32) == 2.0f);
  CHECK(RoundToDType(0.3f, DType::kBool) == 1.0f);
  CHECK(RoundToDType(0.0f, DType::kBool) == 0.0f);
  CHECK(RoundToDType(0.1f, DType::kFloat32) == 0.1f);
}

}  // namespace
}  // namespace memplan
