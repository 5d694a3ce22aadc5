#pragma once
// bitsandbytes' 8-bit "dynamic" quantisation map (functional.create_dynamic_map, Dettmers 2015
// "8-Bit Approximations for Parallelism in Deep Learning"), as its block-wise 8-bit optimizers
// store their moments: 256 codes in [-1, 1] (signed, the first moment) or [0, 1] (unsigned, the
// second moment), with a dynamic exponent so values far below the block's absmax keep relative
// precision (a linear code would round them to 0, and a zero second moment beside a non-zero first
// one turns Adam's update into m / eps).
//
//   signed:   0, 1 and, for i = 0..6, +-10^(i-6) * the 2^i midpoints of linspace(0.1, 1, 2^i + 1)
//   unsigned: 0, 1 and, for i = 0..6, 10^(i-6) * the 2^(i+1) midpoints of linspace(0.1, 1,
//   2^(i+1)+1)
//
// A value x of a block with absmax a is stored as the index of the code nearest to x / a, and read
// back as code[index] * a.

#include <array>
#include <cstdint>

namespace memplan {

// The 256 codes, ascending.
const std::array<float, 256>& DynamicQuantizationMap(bool is_signed);

// Index of the code nearest to `normalized` (ties to the smaller code). REQUIRES: the map is
// DynamicQuantizationMap's.
uint8_t NearestCode(const std::array<float, 256>& map, float normalized);

}  // namespace memplan
