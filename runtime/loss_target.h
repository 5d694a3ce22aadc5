#pragma once
// The graph value the program's loss reads. The loss step names a buffer, and a buffer names the
// value it stores: for a model output that is a view (a Split chunk, a Slice, a Reshape of the last
// MatMul's output) that is the view's base, whose shape is not the output's. The loss backward's
// gradient target is the output's own gradient buffer, so it names the value itself.

#include "analyzer/program/training_program.h"
#include "graph/ids.h"

namespace memplan {

// The value whose gradient the loss backward writes; else (no gradient reaches the output) the
// value of the buffer the loss step reads. Invalid when the program has no loss step.
ValueId LossTargetValue(const TrainingProgram& program);

}  // namespace memplan
