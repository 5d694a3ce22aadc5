#pragma once
// Derivation pass 5, buffers and liveness: where each buffer emission allocated is freed. A
// non-persistent buffer lives over [alloc, last_use], inclusive (training_program.h), so it is
// freed at the End of its last use; persistent buffers and buffers emission frees itself (guarded
// steals, found_inf, master gradients) are left alone. A forward buffer that survives the loss
// step is held for backward (a saved tensor or a recompute checkpoint), and counts as an
// activation even when it started as a transient.
//
//   step:      0 load  1 fwd A  2 fwd B  3 loss  4 bwd B  5 bwd A
//   x          alloc   use                                       -> free at End of 1
//   a = A(x)           alloc    use              saved by B      -> free at End of 4, held

#include <vector>

#include "analyzer/derivation/program_builder.h"
#include "analyzer/program/training_program.h"

namespace memplan {

struct PlannedFree {
  LogicalTime step = -1;  // the step whose End frees it
  BufferId buffer;
};

struct LivenessPlan {
  std::vector<PlannedFree> frees;           // in buffer id order
  std::vector<BufferId> held_for_backward;  // forward buffers alive after the loss step
};

// REQUIRES: `uses` indexed by BufferId of `program` (ProgramBuilder::uses()); `holds`, when
// given, too (python_references.h): a buffer is freed at the later of its last use and its hold,
// and is held for backward by its last use alone.
LivenessPlan PlanLiveness(const TrainingProgram& program, const std::vector<BufferUse>& uses,
                          const std::vector<LogicalTime>* holds = nullptr);

// Appends the frees to their steps' End and marks held buffers (transients become activations).
void ApplyLiveness(const LivenessPlan& plan, TrainingProgram& program);

}  // namespace memplan
