#include "analyzer/planning/candidate_evaluator.h"

#include "analyzer/planning/derivation_cache.h"

namespace memplan::planning {

RecomputeLabel RecomputeLabelOf(const PlannerOptions& options, const TrainingProgram& program) {
  return options.recompute_label      ? *options.recompute_label
         : program.recomputed.empty() ? RecomputeLabel::kNone
                                      : RecomputeLabel::kCustom;
}

Expected<std::unique_ptr<CandidateEvaluator>> EvaluatorFor(const Graph& graph,
                                                           const PlannerOptions& options) {
  ProgramOptions program_options = options.program;
  program_options.accumulation_steps = 1;
  std::shared_ptr<TrainingProgram> program;
  if (options.derivations) {
    MEMPLAN_TRY(program, options.derivations->Program(graph, program_options));
  } else {
    MEMPLAN_TRY(TrainingProgram derived, DeriveTrainingProgram(graph, program_options));
    program = std::make_shared<TrainingProgram>(std::move(derived));
  }
  const RecomputeLabel label = RecomputeLabelOf(options, *program);
  auto evaluator = std::make_unique<CandidateEvaluator>(graph, options, std::move(program), label);
  // Every symbol but the batch must be bound: check once with m = 1 so the error names it.
  MEMPLAN_RETURN_IF_ERROR(evaluator->SizesAt(1));
  return evaluator;
}

}  // namespace memplan::planning
