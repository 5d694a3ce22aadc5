#include "profiler/step_table.h"

#include "graph/expected.h"

namespace memplan::profiler {

std::string_view StepPhaseName(StepPhase phase) {
  switch (phase) {
    case StepPhase::kSetup:
      return "setup";
    case StepPhase::kLoad:
      return "load";
    case StepPhase::kForward:
      return "forward";
    case StepPhase::kBackward:
      return "backward";
    case StepPhase::kRecompute:
      return "recompute";
    case StepPhase::kOptimizer:
      return "optimizer";
  }
  return "forward";
}

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
      return StepPhase::kBackward;
    case StepKind::kRecompute:
      return StepPhase::kRecompute;
    case StepKind::kUnscaleAndCheckOverflow:
    case StepKind::kClipGradients:
    case StepKind::kOptimizerStep:
    case StepKind::kZeroGradients:
      return StepPhase::kOptimizer;
  }
  return StepPhase::kForward;
}

ProfiledStep DescribeStep(const TrainingProgram& program, LogicalTime t, int64_t micro_batch,
                          uint64_t external_id) {
  MEMPLAN_CHECK(t >= 0 && static_cast<size_t>(t) < program.steps.size());
  const Step& step = program.step(t);
  ProfiledStep described;
  described.external_id = external_id;
  described.step = t;
  described.name = step.name;
  if (step.node.valid()) described.node = step.name;
  described.phase = PhaseOfStep(step.kind);
  described.micro_batch = program.micro_batch.contains(t) ? micro_batch : 0;
  return described;
}

}  // namespace memplan::profiler
