#include "analyzer/derivation/liveness.h"

#include <algorithm>

#include "analyzer/program/unguarded_events.h"

namespace memplan {

LivenessPlan PlanLiveness(const TrainingProgram& program, const std::vector<BufferUse>& uses,
                          const std::vector<LogicalTime>* holds) {
  LivenessPlan plan;
  for (const Buffer& b : program.buffers) {
    const BufferUse& use = uses[b.id.index()];
    // A saved tensor that backward hands on as a gradient (OpSchema::gradients_from_saved) is
    // freed by the step that consumes it, but is held for backward all the same.
    const bool saved_extra = b.role == BufferRole::kSavedExtra;
    if (b.persistent || (use.explicit_free && !saved_extra) || use.alloc < 0) continue;
    const LogicalTime last = std::max(use.last_use, use.alloc);
    const LogicalTime hold = holds != nullptr ? (*holds)[b.id.index()] : -1;
    if (!use.explicit_free) plan.frees.push_back(PlannedFree{std::max(last, hold), b.id});
    // Held for backward by autograd's uses alone. A batch tensor that save_on_cpu copied to the
    // host (its last use a pack step after the loss) stays on the GPU only through the loop's
    // variable (the hold): autograd holds the host copy, so it is not held for backward here.
    const Step& last_step = program.step(last);
    const bool copied_off = hold > last && last_step.kind == StepKind::kTransfer &&
                            last_step.transfer.direction == TransferDirection::kToHost;
    if (use.alloc <= program.loss_step && last > program.loss_step && !copied_off &&
        !use.held_by_checkpoint)
      plan.held_for_backward.push_back(b.id);
  }
  return plan;
}

void ApplyLiveness(const LivenessPlan& plan, TrainingProgram& program) {
  for (const PlannedFree& f : plan.frees) {
    program.steps[static_cast<size_t>(f.step)].end.push_back(FreeEvent(f.buffer));
  }
  for (BufferId id : plan.held_for_backward) {
    Buffer& b = program.buffers[id.index()];
    b.held_for_backward = true;
    if (b.category == MemoryCategory::kTransients) b.category = MemoryCategory::kActivations;
  }
}

}  // namespace memplan
