#include "analyzer/planning/derivation_cache.h"

#include <catch2/catch.hpp>

#include "tests/analyzer/planning/planner_test_budget.h"

namespace memplan::testing {
namespace {

TEST_CASE("a derivation cache derives once per graph and program options",
          "[planner][derivation_cache]") {
  TestGraph t = PlannerMlp();
  TestGraph other = PlannerMlp();
  DerivationCache cache;
  ProgramOptions fp32;
  ProgramOptions fp16 = fp32;
  fp16.precision = Precision::kFp16;
  const std::shared_ptr<TrainingProgram> first = cache.Program(t.graph, fp32).value();
  // Equal options on the same graph: the same program, not derived again.
  CHECK(cache.Program(t.graph, fp32).value() == first);
  CHECK(cache.size() == 1);
  // Any option that differs derives: the precision, a recompute set, the other graph.
  const std::shared_ptr<TrainingProgram> fp16_program = cache.Program(t.graph, fp16).value();
  CHECK(fp16_program != first);
  ProgramOptions recompute = fp32;
  recompute.recompute = {NodeId(1)};  // relu
  CHECK(cache.Program(t.graph, recompute).value() != first);
  CHECK(cache.Program(other.graph, fp32).value() != first);
  CHECK(cache.size() == 4);
  // Full (kMaxPrograms = 4): a fifth program drops the least recently used, fp16 once fp32 was
  // asked again, and fp32 stays.
  CHECK(cache.Program(t.graph, fp32).value() == first);
  ProgramOptions bf16 = fp32;
  bf16.precision = Precision::kBf16;
  CHECK(cache.Program(t.graph, bf16).ok());
  CHECK(cache.size() == 4);
  CHECK(cache.Program(t.graph, fp32).value() == first);
  CHECK(cache.Program(t.graph, fp16).value() != fp16_program);  // derived again
  // What DeriveTrainingProgram makes of those options.
  const TrainingProgram derived = DeriveTrainingProgram(t.graph, fp32).value();
  REQUIRE(first->steps.size() == derived.steps.size());
  REQUIRE(first->buffers.size() == derived.buffers.size());
  for (size_t i = 0; i < derived.steps.size(); ++i) {
    CHECK(first->steps[i].kind == derived.steps[i].kind);
    CHECK(first->steps[i].name == derived.steps[i].name);
  }
}

TEST_CASE("a derivation cache keeps no error and plans what PlanTraining plans without it",
          "[planner][derivation_cache]") {
  TestGraph t = PlannerMlp();
  DerivationCache cache;
  ProgramOptions bad;
  bad.recompute = {NodeId(99)};  // the MLP has 3 nodes
  CHECK_FALSE(cache.Program(t.graph, bad).ok());
  CHECK(cache.size() == 0);

  // Budget = the exact peak at m = 37 (ExactPeak, simulated without the planner).
  PlannerOptions options = OptionsFittingExactly(t.graph, 37, 1);
  const TrainingPlan alone = PlanTraining(t.graph, options).value();
  options.derivations = std::make_shared<DerivationCache>();
  const TrainingPlan first = PlanTraining(t.graph, options).value();
  const TrainingPlan second = PlanTraining(t.graph, options).value();
  CHECK(options.derivations->size() == 1);
  for (const TrainingPlan* plan : {&first, &second}) {
    CHECK(plan->chosen.micro_batch == 37);
    CHECK(plan->chosen.micro_batch == alone.chosen.micro_batch);
    CHECK(plan->chosen.peak_bytes == alone.chosen.peak_bytes);
    CHECK(plan->program.steps.size() == alone.program.steps.size());
  }
  // The plans copied the cached program: the cache still holds all of it.
  const TrainingProgram& cached = *options.derivations->Program(t.graph, options.program).value();
  CHECK(cached.steps.size() == alone.program.steps.size());
  CHECK(cached.buffers.size() == alone.program.buffers.size());
}

}  // namespace
}  // namespace memplan::testing
