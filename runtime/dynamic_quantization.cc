#include "runtime/dynamic_quantization.h"

#include <algorithm>
#include <cmath>
#include <vector>

namespace memplan {
namespace {

constexpr int kExponentBits = 7;

std::array<float, 256> BuildMap(bool is_signed) {
  std::vector<double> data;
  for (int i = 0; i < kExponentBits; ++i) {
    const int fraction_items = is_signed ? (1 << i) + 1 : (1 << (i + 1)) + 1;
    const double scale = std::pow(10.0, -(kExponentBits - 1) + i);
    const double step = 0.9 / (fraction_items - 1);
    for (int k = 0; k + 1 < fraction_items; ++k) {
      const double mean = 0.1 + (k + 0.5) * step;  // midpoint of two linspace(0.1, 1) boundaries
      data.push_back(scale * mean);
      if (is_signed) data.push_back(-scale * mean);
    }
  }
  data.push_back(0.0);
  data.push_back(1.0);
  std::sort(data.begin(), data.end());
  std::array<float, 256> map{};
  // Signed and unsigned both give 254 + 2 codes.
  for (size_t i = 0; i < map.size() && i < data.size(); ++i) map[i] = static_cast<float>(data[i]);
  return map;
}

}  // namespace

const std::array<float, 256>& DynamicQuantizationMap(bool is_signed) {
  static const std::array<float, 256> kSigned = BuildMap(true);
  static const std::array<float, 256> kUnsigned = BuildMap(false);
  return is_signed ? kSigned : kUnsigned;
}

uint8_t NearestCode(const std::array<float, 256>& map, float normalized) {
  const auto upper = std::lower_bound(map.begin(), map.end(), normalized);
  if (upper == map.begin()) return 0;
  if (upper == map.end()) return 255;
  const auto lower = upper - 1;
  const bool take_lower = normalized - *lower <= *upper - normalized;
  return static_cast<uint8_t>((take_lower ? lower : upper) - map.begin());
}

}  // namespace memplan
