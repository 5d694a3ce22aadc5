#pragma once
// fp16 / bf16 emulation on fp32 storage: the CPU backend rounds fp32 results to the narrower
// format exactly as a conversion on the GPU would (IEEE round-to-nearest-even, overflow to
// infinity, fp16 subnormals kept, NaN stays NaN), so fp16 numerics can be tested without a GPU.

#include <cstdint>

#include "graph/dtype.h"

namespace memplan {

// IEEE binary16 bits of `x`, rounded to nearest even. |x| >= 65520 becomes infinity (65504 is
// the largest finite value and 65520 the midpoint to 2^16, which ties to the even encoding, inf).
uint16_t FloatToHalfBits(float x);
float HalfBitsToFloat(uint16_t bits);
// bfloat16 bits of `x` (the upper half of the fp32 encoding after round-to-nearest-even).
uint16_t FloatToBFloat16Bits(float x);
float BFloat16BitsToFloat(uint16_t bits);

// x rounded to the nearest fp16 / bf16 value, returned as a float.
float RoundToFloat16(float x);
float RoundToBFloat16(float x);

// Rounds to what `dtype` can hold: fp16/bf16 as above; integer types truncate toward zero
// (as a C cast and torch's .to() do); bool becomes 0 or 1; fp32 and fp64 are unchanged.
float RoundToDType(float x, DType dtype);
void RoundToDTypeInPlace(float* data, int64_t count, DType dtype);

}  // namespace memplan
