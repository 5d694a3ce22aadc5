#include "runtime/precision_emulation.h"

#include <bit>
#include <cmath>

#include "graph/integer_dtypes.h"

namespace memplan {

uint16_t FloatToHalfBits(float x) {
  const uint32_t f = std::bit_cast<uint32_t>(x);
  const auto sign = static_cast<uint16_t>((f >> 16) & 0x8000u);
  const uint32_t magnitude = f & 0x7FFFFFFFu;
  if (magnitude >= 0x7F800000u) {  // inf or NaN; NaN becomes the canonical quiet NaN
    return static_cast<uint16_t>(sign | (magnitude > 0x7F800000u ? 0x7E00u : 0x7C00u));
  }
  if (magnitude >= 0x477FF000u) return static_cast<uint16_t>(sign | 0x7C00u);  // >= 65520
  if (magnitude < 0x38800000u) {
    // Below 2^-14 the result is an fp16 subnormal, a multiple of 2^-24. Scaling by 2^24 is exact
    // and leaves an integer-or-fraction below 1024 that nearbyint rounds half-to-even (the default
    // rounding mode). 1024 is the encoding of the smallest normal, so the bits are the integer.
    const float scaled = std::bit_cast<float>(magnitude) * 16777216.0f;
    return static_cast<uint16_t>(sign | static_cast<uint16_t>(std::nearbyint(scaled)));
  }
  // Normal: rebias the exponent (127 -> 15, i.e. subtract 112 << 23) and drop 13 mantissa bits,
  // rounding to nearest even. A carry out of the mantissa correctly bumps the exponent.
  uint32_t half = (magnitude - 0x38000000u) >> 13;
  const uint32_t dropped = magnitude & 0x1FFFu;
  if (dropped > 0x1000u || (dropped == 0x1000u && (half & 1u))) ++half;
  return static_cast<uint16_t>(sign | half);
}

float HalfBitsToFloat(uint16_t bits) {
  const uint32_t sign = static_cast<uint32_t>(bits & 0x8000u) << 16;
  const uint32_t exponent = (bits >> 10) & 0x1Fu;
  const uint32_t mantissa = bits & 0x3FFu;
  if (exponent == 0) {  // zero or subnormal: mantissa * 2^-24
    const float value = static_cast<float>(mantissa) * 5.9604644775390625e-8f;
    return sign ? -value : value;
  }
  if (exponent == 0x1F) return std::bit_cast<float>(sign | 0x7F800000u | (mantissa << 13));
  return std::bit_cast<float>(sign | ((exponent + 112u) << 23) | (mantissa << 13));
}

uint16_t FloatToBFloat16Bits(float x) {
  const uint32_t f = std::bit_cast<uint32_t>(x);
  if ((f & 0x7FFFFFFFu) > 0x7F800000u) return static_cast<uint16_t>((f >> 16) | 0x0040u);  // NaN
  // Round to nearest even on the 16 dropped bits; overflow carries into infinity by itself.
  const uint32_t lsb = (f >> 16) & 1u;
  return static_cast<uint16_t>((f + 0x7FFFu + lsb) >> 16);
}

float BFloat16BitsToFloat(uint16_t bits) {
  return std::bit_cast<float>(static_cast<uint32_t>(bits) << 16);
}

float RoundToFloat16(float x) { return HalfBitsToFloat(FloatToHalfBits(x)); }
float RoundToBFloat16(float x) { return BFloat16BitsToFloat(FloatToBFloat16Bits(x)); }

float RoundToDType(float x, DType dtype) {
  if (IsInteger(dtype)) return std::isfinite(x) ? std::trunc(x) : 0.0f;
  switch (dtype) {
    case DType::kFloat16:
      return RoundToFloat16(x);
    case DType::kBFloat16:
      return RoundToBFloat16(x);
    case DType::kBool:
      return x != 0.0f ? 1.0f : 0.0f;
    default:
      return x;
  }
}

void RoundToDTypeInPlace(float* data, int64_t count, DType dtype) {
  if (dtype == DType::kFloat32 || dtype == DType::kFloat64) return;
  for (int64_t i = 0; i < count; ++i) data[i] = RoundToDType(data[i], dtype);
}

}  // namespace memplan
