#pragma once
// The CPU runtime's counter-based random numbers: SplitMix64's finaliser over a counter, so a
// value depends only on its seed and index, which is what lets a recomputed forward reproduce a
// dropout mask exactly and initial weights come out the same on every run.

#include <cstdint>

namespace memplan {

// SplitMix64's finaliser: every bit of x moves every bit of the result.
inline uint64_t SplitMix64(uint64_t x) {
  x += 0x9E3779B97F4A7C15ull;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
  return x ^ (x >> 31);
}

// The dropout draw of element `index` under `seed`: uniform in [0, 1) from the top 53 bits. The
// Dropout kernel and SDPA's attention dropout keep an element when it is >= the drop ratio.
inline double DropoutUniform(uint64_t seed, int64_t index) {
  const uint64_t bits = SplitMix64(seed * 0x2545F4914F6CDD1Dull + static_cast<uint64_t>(index));
  return static_cast<double>(bits >> 11) * 0x1.0p-53;
}

}  // namespace memplan
