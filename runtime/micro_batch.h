#pragma once
// The host data of one micro-batch, in the order the executor asks for it.

#include <vector>

namespace memplan {

struct MicroBatch {
  // One entry per graph input that has a program buffer, in Executor::InputValues() order;
  // row-major, one float per element (integer ids as exact floats).
  std::vector<std::vector<float>> inputs;
  std::vector<float> label;  // empty when the loss has no label (sum)
};

}  // namespace memplan
