#include "analyzer/vocabulary/step_phase.h"

namespace memplan {

StepPhase PhaseOfStep(StepKind kind) {
  switch (kind) {
    case StepKind::kAllocateParameters:
    case StepKind::kInitLossScaler:
      return StepPhase::kSetup;
    case StepKind::kLoadMicroBatch:
      return StepPhase::kLoad;
    case StepKind::kForward:
    case StepKind::kLoss:
      return StepPhase::kForward;
    case StepKind::kLossBackward:
    case StepKind::kBackward:
    case StepKind::kAccumulateGradient:
    case StepKind::kCastGradient:
      return StepPhase::kBackward;
    case StepKind::kRecompute:
      return StepPhase::kRecompute;
    case StepKind::kUnscaleAndCheckOverflow:
    case StepKind::kClipGradients:
    case StepKind::kOptimizerStep:
    case StepKind::kZeroGradients:
      return StepPhase::kOptimizer;
    case StepKind::kCollective:
    case StepKind::kBucketCopy:
    case StepKind::kTransfer:
      // A collective or a host transfer belongs to the phase it sits in; by kind alone it is
      // communication, which reports group with the optimizer phase unless PhaseOfStep(program,
      // t) places it.
      return StepPhase::kOptimizer;
  }
  MEMPLAN_CHECK(false && "a step kind without a phase");
  return StepPhase::kForward;
}

std::string_view CoarsePhaseName(StepPhase phase) {
  switch (phase) {
    case StepPhase::kLoad:
    case StepPhase::kForward:
      return "forward";
    case StepPhase::kBackward:
    case StepPhase::kRecompute:
      return "backward";
    case StepPhase::kSetup:
    case StepPhase::kOptimizer:
      return "optimizer";
  }
  MEMPLAN_CHECK(false && "a step phase without a coarse name");
  return "forward";
}

std::string_view CoarsePhaseNameAt(const TrainingProgram& program, LogicalTime t) {
  if (t < 0 || static_cast<size_t>(t) >= program.steps.size()) return "forward";
  return CoarsePhaseName(PhaseOfStep(program, t));
}

}  // namespace memplan
