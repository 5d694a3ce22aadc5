#pragma once
// One reference case of make_kernel_references.py's with_grads, as kernel_references.h gathers
// it: the inputs (shape and values), the gradient of each input, the output (shape and values)
// and the cotangent backward was given.

#include <cstdint>
#include <vector>

namespace memplan::testing::ref {

struct Operand {
  std::vector<int64_t> shape;
  std::vector<float> values;
};

struct GradCase {
  std::vector<Operand> inputs;
  std::vector<std::vector<float>> grads;
  std::vector<int64_t> out_shape;
  std::vector<float> out, cotangent;
};

}  // namespace memplan::testing::ref
