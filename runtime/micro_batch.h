#pragma once
// The host data of one micro-batch, in the order the executor asks for it.

#include <vector>

namespace memplan {

struct MicroBatch {
  // One entry per graph input that has a program buffer, in Executor::InputValues() order;
  // row-major, one float per element (integer ids as exact floats).
  std::vector<std::vector<float>> inputs;
  // One per loss term (TrainingProgram::loss_terms), empty for a term without a label (sum).
  std::vector<std::vector<float>> labels;
};

}  // namespace memplan
