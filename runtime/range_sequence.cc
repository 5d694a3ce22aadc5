#include "runtime/range_sequence.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <string>

namespace memplan {

Expected<std::vector<float>> RangeSequence(double start, double limit, double delta) {
  if (delta == 0) return MakeError("Range: delta is 0");
  const double count = std::max(0.0, std::ceil((limit - start) / delta));
  // 2^31 floats are 8 GiB: a length past that is a wrong input, not a sequence to build.
  if (!(count < 2147483648.0))
    return MakeError("Range: " + std::to_string(count) + " elements is too many");
  std::vector<float> values(static_cast<size_t>(count));
  // start + i * delta, as torch's arange and the ONNX reference compute each element (no
  // running sum, whose rounding would drift).
  for (size_t i = 0; i < values.size(); ++i)
    values[i] = static_cast<float>(start + static_cast<double>(i) * delta);
  return values;
}

}  // namespace memplan
