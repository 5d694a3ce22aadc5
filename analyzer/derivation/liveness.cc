#include "analyzer/derivation/liveness.h"

#include <algorithm>

namespace memplan {

LivenessPlan PlanLiveness(const TrainingProgram& program, const std::vector<BufferUse>& uses) {
  LivenessPlan plan;
  for (const Buffer& b : program.buffers) {
    const BufferUse& use = uses[b.id.index()];
    if (b.persistent || use.explicit_free || use.alloc < 0) continue;
    const LogicalTime last = std::max(use.last_use, use.alloc);
    plan.frees.push_back(PlannedFree{last, b.id});
    if (use.alloc <= program.loss_step && last > program.loss_step)
      plan.held_for_backward.push_back(b.id);
  }
  return plan;
}

void ApplyLiveness(const LivenessPlan& plan, TrainingProgram& program) {
  for (const PlannedFree& f : plan.frees) {
    program.steps[static_cast<size_t>(f.step)].end.push_back(
        MemoryEvent{MemoryEvent::Action::kFree, f.buffer, MemoryEvent::Guard::kNone, BufferId()});
  }
  for (BufferId id : plan.held_for_backward) {
    Buffer& b = program.buffers[id.index()];
    b.held_for_backward = true;
    if (b.category == MemoryCategory::kTransients) b.category = MemoryCategory::kActivations;
  }
}

}  // namespace memplan
