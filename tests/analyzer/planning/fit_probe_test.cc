#include "analyzer/planning/fit_probe.h"

#include <catch2/catch.hpp>

#include "tests/analyzer/planning/planner_test_budget.h"

namespace memplan::testing {
namespace {

TEST_CASE("a fit probe derives once and judges any micro-batch as PlanTraining does",
          "[planner][fit_probe]") {
  TestGraph t = PlannerMlp();
  // Budget = the exact peak at m = 37, simulated without the planner (ExactPeak).
  PlannerOptions options = OptionsFittingExactly(t.graph, 37, 1);
  std::unique_ptr<FitProbe> probe = FitProbe::Derive(t.graph, options).value();
  const int64_t budget = options.gpu.memory_bytes - options.gpu.context_bytes;
  for (int64_t m : {1, 37, 38, 64}) {
    FixedMicroBatchFit fit = probe->At(m).value();
    CHECK(fit.peak_bytes == ExactPeak(t.graph, m, 1));
    CHECK(fit.budget_bytes == budget);
    CHECK(fit.headroom_bytes == 0);
  }
  CHECK(probe->At(37).value().peak_bytes <= budget);
  CHECK(probe->At(38).value().peak_bytes > budget);
  // The same m as PlanTraining with that micro-batch fixed.
  PlannerOptions fixed = options;
  fixed.micro_batch = 38;
  CHECK(PlanTraining(t.graph, fixed).value().chosen.peak_bytes == probe->At(38).value().peak_bytes);
}

TEST_CASE("a fit probe uses the accumulation a fixed micro-batch gets from the global batch",
          "[planner][fit_probe]") {
  TestGraph t = PlannerMlp();
  PlannerOptions options = OptionsFittingExactly(t.graph, 8, 2);
  // G = 12 at m = 5: k = ceil(12 / 5) = 3, and with k > 1 the gradients persist through the
  // second micro-batch's forward: the peak is ExactPeak(m = 5, k = 3), above k = 1's.
  options.global_batch = 12;
  // 10% headroom of the budget.
  options.headroom.fraction = 0.10;
  std::unique_ptr<FitProbe> probe = FitProbe::Derive(t.graph, options).value();
  FixedMicroBatchFit fit = probe->At(5).value();
  CHECK(fit.peak_bytes == ExactPeak(t.graph, 5, 3));
  CHECK(fit.peak_bytes > ExactPeak(t.graph, 5, 1));
  const int64_t budget = ExactPeak(t.graph, 8, 2);
  CHECK(fit.budget_bytes == budget);
  CHECK(fit.headroom_bytes == static_cast<int64_t>(0.10 * static_cast<double>(budget)));
}

TEST_CASE("a fit probe plans its program as PlanTraining plans it, and still probes after",
          "[planner][fit_probe]") {
  TestGraph t = PlannerMlp();
  // Budget = the exact peak at m = 37 (ExactPeak, simulated without the planner), a global batch
  // of 40 to split: the search on the probe's evaluator (its memo filled by the probes below)
  // must end where PlanTraining's on a fresh derivation ends, with the label it is given.
  PlannerOptions options = OptionsFittingExactly(t.graph, 37, 1);
  options.global_batch = 40;
  std::unique_ptr<FitProbe> probe = FitProbe::Derive(t.graph, options).value();
  for (int64_t m : {1, 20, 37, 38}) REQUIRE(probe->At(m).ok());  // the probes' memo is filled
  const TrainingPlan probed = probe->Plan(RecomputeLabel::kOptimal).value();
  PlannerOptions labelled = options;
  labelled.recompute_label = RecomputeLabel::kOptimal;
  const TrainingPlan planned = PlanTraining(t.graph, labelled).value();
  CHECK(probed.chosen.micro_batch == planned.chosen.micro_batch);
  CHECK(probed.chosen.accumulation_steps == planned.chosen.accumulation_steps);
  CHECK(probed.chosen.peak_bytes == planned.chosen.peak_bytes);
  CHECK(probed.chosen.samples_per_second == planned.chosen.samples_per_second);
  CHECK(probed.chosen.recompute == RecomputeLabel::kOptimal);
  CHECK(probed.candidates.size() == planned.candidates.size());
  CHECK(probed.program.steps.size() == planned.program.steps.size());
  CHECK(probed.program.accumulation_steps == planned.program.accumulation_steps);
  CHECK(probed.simulation.peak_bytes == planned.simulation.peak_bytes);
  // The plan copied the program: the probe answers as before (m = 38 under G = 40: k = 2).
  CHECK(probe->At(38).value().peak_bytes == ExactPeak(t.graph, 38, 2));
}

TEST_CASE("a fit probe refuses what PlanTraining refuses", "[planner][fit_probe]") {
  TestGraph t = PlannerMlp();
  PlannerOptions options = OptionsFittingExactly(t.graph, 4, 1);
  std::unique_ptr<FitProbe> probe = FitProbe::Derive(t.graph, options).value();
  Expected<FixedMicroBatchFit> zero = probe->At(0);
  REQUIRE_FALSE(zero.ok());
  CHECK(zero.error().message == "the micro-batch must be at least 1");
  options.reserve_bytes = options.gpu.memory_bytes;  // nothing left for training
  CHECK_FALSE(FitProbe::Derive(t.graph, options).value()->At(1).ok());
}

}  // namespace
}  // namespace memplan::testing
