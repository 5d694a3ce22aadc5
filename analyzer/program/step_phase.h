#pragma once
// Where in the training step a program step falls: one classification by step kind, read by the
// profiler (which splits node time and memory by phase) and by reports (which say where the peak
// is). kForward includes the loss; kBackward includes loss backward and gradient accumulation.
//
// Reports speak in three coarse phases, each a union of fine ones:
//   "forward"   = kLoad + kForward           (the body up to and including the loss)
//   "backward"  = kBackward + kRecompute     (the body after the loss)
//   "optimizer" = kSetup + kOptimizer        (outside the body)

#include <cstdint>
#include <string_view>

#include "analyzer/program/training_program.h"
#include "analyzer/vocabulary/enum_table.h"
#include "analyzer/vocabulary/name_table.h"

namespace memplan {

// Each phase with its coarse phase (the table above) as the last column.
#define MEMPLAN_STEP_PHASES(X)           \
  X(kSetup, "setup", "optimizer")        \
  X(kLoad, "load", "forward")            \
  X(kForward, "forward", "forward")      \
  X(kBackward, "backward", "backward")   \
  X(kRecompute, "recompute", "backward") \
  X(kOptimizer, "optimizer", "optimizer")
MEMPLAN_VOCABULARY(StepPhase, MEMPLAN_STEP_PHASES, "step phase");

StepPhase PhaseOfStep(StepKind kind);

// The coarse phase reports print: "forward", "backward" or "optimizer" (see the table above).
inline constexpr auto kCoarsePhaseNames =
    MEMPLAN_ENUM_COLUMN(StepPhase, MEMPLAN_STEP_PHASES, std::string_view);
inline std::string_view CoarsePhaseName(StepPhase phase) {
  return ValueOf(kCoarsePhaseNames, phase);
}
// The coarse phase of `program.steps[t]`; "forward" for a time outside the program (the peak of
// an empty simulation is step -1), as memplan/1's `peak.phase` has always said.
std::string_view CoarsePhaseNameAt(const TrainingProgram& program, LogicalTime t);

// The phase of `program.steps[t]`. REQUIRES: 0 <= t < program.steps.size().
// A collective (per-rank programs) or a host transfer (--offload) takes the phase of where it
// sits: setup, forward (up to the loss), backward (after it) or optimizer.
inline StepPhase PhaseOfStep(const TrainingProgram& program, LogicalTime t) {
  const StepKind kind = program.step(t).kind;
  if (kind == StepKind::kCollective || kind == StepKind::kBucketCopy ||
      kind == StepKind::kTransfer) {
    if (program.setup.contains(t)) return StepPhase::kSetup;
    if (program.micro_batch.contains(t))
      return t <= program.loss_step ? StepPhase::kForward : StepPhase::kBackward;
  }
  return PhaseOfStep(program.step(t).kind);
}

}  // namespace memplan
