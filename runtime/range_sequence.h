#pragma once
// ONNX Range(start, limit, delta) (torch.arange): start, start + delta, ... up to but not
// including limit; max(ceil((limit - start) / delta), 0) elements. One definition for the
// executor's constants (runtime/constant_values.h) and the CPU kernel that runs a Range whose
// inputs are computed during the step (runtime/cpu/kernels/range.cc).

#include <vector>

#include "graph/expected.h"

namespace memplan {

// Errors: delta 0, or more elements than a tensor can index.
Expected<std::vector<float>> RangeSequence(double start, double limit, double delta);

}  // namespace memplan
