#include "runtime/loss_target.h"

namespace memplan {

ValueId LossTargetValue(const TrainingProgram& program) {
  for (LogicalTime t = program.micro_batch.begin; t < program.micro_batch.end; ++t) {
    const Step& s = program.step(t);
    if (s.kind == StepKind::kLossBackward && !s.input_gradients.empty())
      return program.buffer(s.input_gradients[0].target).value;
  }
  if (program.loss_step < 0) return ValueId();
  return program.buffer(program.step(program.loss_step).inputs.at(0)).value;
}

}  // namespace memplan
