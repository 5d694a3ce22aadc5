#include "analyzer/program/step_phase.h"

#include "name_table_checks.h"

namespace memplan {
namespace {

TEST_CASE("Step phase names round-trip, unknown ones list the choices", "[vocabulary]") {
  vocabulary_test::CheckRoundTrip(kStepPhaseNames, ParseStepPhase);
  vocabulary_test::CheckParseError(
      ParseStepPhase, "loss",
      "unknown step phase 'loss' (choose one of: setup, load, forward, backward, recompute, "
      "optimizer)");
}

TEST_CASE("Every step kind has one phase and one coarse phase", "[vocabulary]") {
  // The loss belongs to forward; loss backward and accumulation to backward (training_program.h
  // puts the body's forward/backward boundary at the loss step).
  CHECK(PhaseOfStep(StepKind::kAllocateParameters) == StepPhase::kSetup);
  CHECK(PhaseOfStep(StepKind::kInitLossScaler) == StepPhase::kSetup);
  CHECK(PhaseOfStep(StepKind::kLoadMicroBatch) == StepPhase::kLoad);
  CHECK(PhaseOfStep(StepKind::kForward) == StepPhase::kForward);
  CHECK(PhaseOfStep(StepKind::kLoss) == StepPhase::kForward);
  CHECK(PhaseOfStep(StepKind::kLossBackward) == StepPhase::kBackward);
  CHECK(PhaseOfStep(StepKind::kRecompute) == StepPhase::kRecompute);
  CHECK(PhaseOfStep(StepKind::kBackward) == StepPhase::kBackward);
  CHECK(PhaseOfStep(StepKind::kAccumulateGradient) == StepPhase::kBackward);
  CHECK(PhaseOfStep(StepKind::kUnscaleAndCheckOverflow) == StepPhase::kOptimizer);
  CHECK(PhaseOfStep(StepKind::kClipGradients) == StepPhase::kOptimizer);
  CHECK(PhaseOfStep(StepKind::kOptimizerStep) == StepPhase::kOptimizer);
  CHECK(PhaseOfStep(StepKind::kZeroGradients) == StepPhase::kOptimizer);
  // Collectives and host transfers take the phase of where they sit (PhaseOfStep(program, t));
  // by kind alone they group with the optimizer phase.
  CHECK(PhaseOfStep(StepKind::kCollective) == StepPhase::kOptimizer);
  CHECK(PhaseOfStep(StepKind::kTransfer) == StepPhase::kOptimizer);

  CHECK(CoarsePhaseName(StepPhase::kSetup) == "optimizer");
  CHECK(CoarsePhaseName(StepPhase::kLoad) == "forward");
  CHECK(CoarsePhaseName(StepPhase::kForward) == "forward");
  CHECK(CoarsePhaseName(StepPhase::kBackward) == "backward");
  CHECK(CoarsePhaseName(StepPhase::kRecompute) == "backward");
  CHECK(CoarsePhaseName(StepPhase::kOptimizer) == "optimizer");
}

TEST_CASE("A time outside the program is in the forward phase", "[vocabulary]") {
  TrainingProgram empty;
  CHECK(CoarsePhaseNameAt(empty, -1) == "forward");
  CHECK(CoarsePhaseNameAt(empty, 0) == "forward");
}

}  // namespace
}  // namespace memplan
