#pragma once
// Memory sizes as people write them on the command line (`--gpu 24G`, `--reserve 512MiB`) and as
// reports print them.
//
// Units, explicitly (the two conventions differ by 7% at G, so memplan never guesses):
//   * binary:  K, M, G, T  and  KiB, MiB, GiB, TiB  = 2^10, 2^20, 2^30, 2^40 bytes;
//   * decimal: KB, MB, GB, TB                       = 10^3, 10^6, 10^9, 10^12 bytes;
//   * no unit or `B`: bytes.
// A bare letter means the binary unit because that is how nvidia-smi and `free -g` print memory:
// a card sold as "24GB" has 24 GiB of DRAM and `24G` means 24 * 2^30. Write `24GB` to mean
// 24 * 10^9 bytes. Units are case-insensitive; one space between number and unit is allowed.
// A fraction (`1.5T`) is exact in decimal and rounds down to whole bytes.

#include <cstdint>
#include <string>
#include <string_view>

#include "graph/expected.h"

namespace memplan {

inline constexpr int64_t kKiB = int64_t{1} << 10;
inline constexpr int64_t kMiB = int64_t{1} << 20;
inline constexpr int64_t kGiB = int64_t{1} << 30;
inline constexpr int64_t kTiB = int64_t{1} << 40;

// "24G" -> 24 * 2^30, "24GB" -> 24 * 10^9, "1.5T" -> 1.5 * 2^40, "24000000000" -> bytes.
// Errors (naming the text) for an empty, malformed, negative, zero or > INT64_MAX size.
Expected<int64_t> ParseMemorySize(std::string_view text);

// Human form for reports, binary units with one decimal: "512 B", "1.5 KiB", "21.4 GiB".
// Negative values (deltas) get a leading '-'.
std::string FormatBytes(int64_t bytes);

}  // namespace memplan
