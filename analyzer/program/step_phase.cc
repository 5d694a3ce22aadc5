#include "analyzer/program/step_phase.h"

#include "analyzer/vocabulary/enum_table.h"

namespace memplan {
namespace {

constexpr EnumTable<StepKind, StepPhase, 17> kPhaseOfStepKind = {{
    {StepKind::kAllocateParameters, StepPhase::kSetup},
    {StepKind::kInitLossScaler, StepPhase::kSetup},
    {StepKind::kLoadMicroBatch, StepPhase::kLoad},
    {StepKind::kForward, StepPhase::kForward},
    {StepKind::kLoss, StepPhase::kForward},
    {StepKind::kLossBackward, StepPhase::kBackward},
    {StepKind::kRecompute, StepPhase::kRecompute},
    {StepKind::kBackward, StepPhase::kBackward},
    {StepKind::kAccumulateGradient, StepPhase::kBackward},
    {StepKind::kCastGradient, StepPhase::kBackward},
    {StepKind::kUnscaleAndCheckOverflow, StepPhase::kOptimizer},
    {StepKind::kClipGradients, StepPhase::kOptimizer},
    {StepKind::kOptimizerStep, StepPhase::kOptimizer},
    {StepKind::kZeroGradients, StepPhase::kOptimizer},
    // A collective or a host transfer belongs to the phase it sits in; by kind alone it is
    // communication, which reports group with the optimizer phase unless PhaseOfStep(program, t)
    // places it.
    {StepKind::kCollective, StepPhase::kOptimizer},
    {StepKind::kBucketCopy, StepPhase::kOptimizer},
    {StepKind::kTransfer, StepPhase::kOptimizer},
}};
static_assert(ListsEvery(kPhaseOfStepKind, kStepKindNames));

}  // namespace

StepPhase PhaseOfStep(StepKind kind) { return ValueOf(kPhaseOfStepKind, kind); }

std::string_view CoarsePhaseNameAt(const TrainingProgram& program, LogicalTime t) {
  if (t < 0 || static_cast<size_t>(t) >= program.steps.size()) return "forward";
  return CoarsePhaseName(PhaseOfStep(program, t));
}

}  // namespace memplan
