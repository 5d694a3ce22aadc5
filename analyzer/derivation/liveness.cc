#include "analyzer/derivation/liveness.h"

#include <algorithm>

#include "analyzer/program/unguarded_events.h"

namespace memplan {

LivenessPlan PlanLiveness(const TrainingProgram& program, const std::vector<BufferUse>& uses) {
  LivenessPlan plan;
  for (const Buffer& b : program.buffers) {
    const BufferUse& use = uses[b.id.index()];
    // A saved tensor that backward hands on as a gradient (OpSchema::gradients_from_saved) is
    // freed by the step that consumes it, but is held for backward all the same.
    const bool saved_extra = b.role == BufferRole::kSavedExtra;
    if (b.persistent || (use.explicit_free && !saved_extra) || use.alloc < 0) continue;
    const LogicalTime last = std::max(use.last_use, use.alloc);
    if (!use.explicit_free) plan.frees.push_back(PlannedFree{last, b.id});
    if (use.alloc <= program.loss_step && last > program.loss_step)
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
