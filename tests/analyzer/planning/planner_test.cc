#include <catch2/catch.hpp>

#include "analyzer/cost/gpu_specs.h"
#include "analyzer/planning/joint_search.h"
#include "analyzer/planning/planner.h"
#include "analyzer/report/advice.h"
#include "analyzer/report/plan_explanation.h"
#include "analyzer/simulation/exact_allocator.h"
#include "tests/analyzer/planning/planner_test_budget.h"

namespace memplan::testing {
namespace {

TEST_CASE("planner finds the largest micro-batch whose peak fits the budget", "[planner]") {
  TestGraph t = PlannerMlp();
  // Budget = peak(37): 37 fits by construction and 38 must not (activations grow with m).
  PlannerOptions options = OptionsFittingExactly(t.graph, 37, 1);
  REQUIRE(ExactPeak(t.graph, 38, 1) > ExactPeak(t.graph, 37, 1));
  TrainingPlan plan = PlanTraining(t.graph, options).value();
  CHECK(plan.feasible);
  CHECK(plan.chosen.micro_batch == 37);
  CHECK(plan.chosen.accumulation_steps == 1);
  CHECK(plan.chosen.peak_bytes == ExactPeak(t.graph, 37, 1));
  CHECK_FALSE(plan.global_batch_requested);
  // The candidates table shows the first micro-batch that does not fit (64 > 37).
  bool shows_non_fitting = false;
  for (const PlanCandidate& c : plan.candidates) shows_non_fitting |= !c.fits;
  CHECK(shows_non_fitting);
}

TEST_CASE("planner prefers a divisor of the global batch so k*m is exact", "[planner]") {
  TestGraph t = PlannerMlp();
  PlannerOptions options = OptionsFittingExactly(t.graph, 5, 2);
  // G = 12, largest fitting m = 5: the largest divisor of 12 not above 5 is 4 (>= 5/2), so
  // m = 4, k = 3, exactly 12.
  options.global_batch = 12;
  TrainingPlan plan = PlanTraining(t.graph, options).value();
  CHECK(plan.largest_fitting_micro_batch == 5);
  CHECK(plan.chosen.micro_batch == 4);
  CHECK(plan.chosen.accumulation_steps == 3);
  CHECK(plan.global_batch_exact);
  // G = 13 is prime: its only divisor <= 5 is 1 (< 5/2), so m = 5, k = ceil(13/5) = 3 and the
  // effective batch 15 is reported as not exact.
  options.global_batch = 13;
  plan = PlanTraining(t.graph, options).value();
  CHECK(plan.chosen.micro_batch == 5);
  CHECK(plan.chosen.accumulation_steps == 3);
  CHECK(plan.chosen.global_batch == 15);
  CHECK_FALSE(plan.global_batch_exact);
}

TEST_CASE("planner reports an infeasible budget with what would fit", "[planner]") {
  TestGraph t = PlannerMlp();
  PlannerOptions options = OptionsFittingExactly(t.graph, 1, 1);
  options.gpu.memory_bytes -= 1;  // one byte short of m = 1
  TrainingPlan plan = PlanTraining(t.graph, options).value();
  CHECK_FALSE(plan.feasible);
  REQUIRE(plan.infeasible.has_value());
  CHECK(plan.infeasible->required_bytes == ExactPeak(t.graph, 1, 1) + options.gpu.context_bytes);
  // Adam states (2 x 4 bytes per parameter) dominate this tiny model at m = 1.
  CHECK(plan.infeasible->dominant == MemoryCategory::kOptimizerState);
  CHECK_FALSE(plan.infeasible->smallest_fitting_gpu.empty());
}

TEST_CASE("planner rejects a reserve larger than the GPU", "[planner]") {
  TestGraph t = PlannerMlp();
  PlannerOptions options;
  options.gpu = ResolveGpu("1G").value();
  options.reserve_bytes = int64_t{2} << 30;
  CHECK_FALSE(PlanTraining(t.graph, options).ok());
}

TEST_CASE("a fixed micro-batch is evaluated without search", "[planner]") {
  TestGraph t = PlannerMlp();
  PlannerOptions options = OptionsFittingExactly(t.graph, 37, 1);
  options.micro_batch = 8;
  TrainingPlan plan = PlanTraining(t.graph, options).value();
  CHECK(plan.chosen.micro_batch == 8);
  CHECK(plan.chosen.peak_bytes == ExactPeak(t.graph, 8, 1));
}

TEST_CASE("mixed precision lets a larger micro-batch fit in the joint search", "[planner]") {
  TestGraph t = PlannerMlp();
  PlannerOptions options = OptionsFittingExactly(t.graph, 64, 1);
  options.gpu.supports_bf16 = true;
  SearchOptions search;
  search.precision = PrecisionChoice::kAuto;
  JointPlan joint = PlanJointly(t.graph, options, search).value();
  // bf16 activations are half as large, so more than the fp32 m = 64 fits; the fp16 copy of the
  // weights and fp32 masters cost more persistent bytes, but activations dominate at m = 64.
  CHECK(joint.plan.feasible);
  CHECK(joint.plan.chosen.precision == Precision::kBf16);
  CHECK(joint.plan.chosen.micro_batch > 64);
  CHECK_FALSE(ExplainPlanChoice(joint.trace).empty());
}

TEST_CASE("advice names accumulation facts with their numbers", "[advice]") {
  TestGraph t = PlannerMlp();
  PlannerOptions options = OptionsFittingExactly(t.graph, 5, 2);
  options.global_batch = 12;
  TrainingPlan plan = PlanTraining(t.graph, options).value();
  std::vector<AdviceItem> advice = AdvisePlan(t.graph, plan);
  auto find = [&](const std::string& id) -> const AdviceItem* {
    for (const AdviceItem& a : advice)
      if (a.id == id) return &a;
    return nullptr;
  };
  REQUIRE(find("learning-rate") != nullptr);
  CHECK(find("learning-rate")->message.find("G=12") != std::string::npos);
  REQUIRE(find("scheduler-steps") != nullptr);
  CHECK(find("scheduler-steps")->message.find("every 3 micro-batches") != std::string::npos);
  REQUIRE(find("clip-after-accumulation") != nullptr);
  CHECK(find("batchnorm-accumulation") == nullptr);  // no BatchNorm in this model
}

TEST_CASE("advice on a global batch one micro-batch reaches says so, not k=1", "[advice]") {
  TestGraph t = PlannerMlp();
  // m = 5 fits exactly; G = 4 is reached by one micro-batch of 4 (the largest divisor that fits).
  PlannerOptions options = OptionsFittingExactly(t.graph, 5, 2);
  options.global_batch = 4;
  TrainingPlan plan = PlanTraining(t.graph, options).value();
  REQUIRE(plan.chosen.micro_batch == 4);
  REQUIRE(plan.chosen.accumulation_steps == 1);
  std::string message;
  for (const AdviceItem& a : AdvisePlan(t.graph, plan))
    if (a.id == "learning-rate") message = a.message;
  CHECK(message ==
        "One micro-batch of m=4 per optimizer step is the global batch G=4 (no accumulation): "
        "keep the learning rate tuned for batch 4.");
}

}  // namespace
}  // namespace memplan::testing
