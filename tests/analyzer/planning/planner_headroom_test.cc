// The headroom rule (--headroom, analyzer/planning/planner.h): the recommended micro-batch is the
// largest whose peak stays under budget - headroom; the largest under the budget itself is reported
// beside it. Budgets are built from independently simulated peaks, so each expected m follows by
// hand.

#include <algorithm>

#include <catch2/catch.hpp>

#include "analyzer/cost/gpu_specs.h"
#include "analyzer/planning/planner.h"
#include "analyzer/simulation/exact_allocator.h"
#include "tests/analyzer/planning/planner_test_budget.h"

namespace memplan::testing {
namespace {

TEST_CASE("headroom: the recommendation stays under budget - headroom, the maximum beside it",
          "[planner]") {
  const TestGraph t = PlannerMlp();
  // A GPU whose budget (memory - context) is exactly the peak at micro-batch 40.
  PlannerOptions options = OptionsFittingExactly(t.graph, 40);
  const int64_t budget = ExactPeak(t.graph, 40);
  REQUIRE(ExactPeak(t.graph, 41) > budget);
  REQUIRE(ExactPeak(t.graph, 31) > ExactPeak(t.graph, 30));

  SECTION("no headroom: the largest that fits, as before") {
    const TrainingPlan plan = PlanTraining(t.graph, options).value();
    CHECK(plan.headroom_bytes == 0);
    CHECK(plan.chosen.micro_batch == 40);
    CHECK(plan.largest_fitting_micro_batch == 40);
    CHECK(plan.largest_within_headroom == 40);
  }
  SECTION("headroom = peak(40) - peak(30): budget - headroom = peak(30), so m = 30, max 40") {
    options.headroom.bytes = budget - ExactPeak(t.graph, 30);
    const TrainingPlan plan = PlanTraining(t.graph, options).value();
    CHECK(plan.headroom_bytes == budget - ExactPeak(t.graph, 30));
    CHECK(plan.chosen.micro_batch == 30);
    CHECK(plan.chosen.peak_bytes == ExactPeak(t.graph, 30));
    CHECK(plan.largest_fitting_micro_batch == 40);
    CHECK(plan.largest_fitting_peak_bytes == budget);  // the maximum sits exactly at the edge
    CHECK(plan.feasible);
  }
  SECTION("one byte more headroom pushes the recommendation to m = 29") {
    options.headroom.bytes = budget - ExactPeak(t.graph, 30) + 1;
    const TrainingPlan plan = PlanTraining(t.graph, options).value();
    CHECK(plan.chosen.micro_batch == 29);
    CHECK(plan.largest_fitting_micro_batch == 40);
  }
  SECTION("a headroom nothing fits under still recommends m = 1, which fits the budget") {
    // budget = peak(1) + 1 and half of it kept free: the parameters, gradients and Adam state
    // alone are 4 x 136192 x 4 B (W1 256x512 + W2 512x10 = 136192 parameters), far above half of
    // peak(1), so no micro-batch fits under the headroom.
    options.headroom.fraction = 0.5;
    options.gpu.memory_bytes = options.gpu.context_bytes + ExactPeak(t.graph, 1) + 1;
    const TrainingPlan plan = PlanTraining(t.graph, options).value();
    CHECK(plan.chosen.micro_batch == 1);
    CHECK(plan.largest_fitting_micro_batch == 1);
    CHECK(plan.feasible);
  }
  SECTION("a headroom over half the budget is an error") {
    options.headroom.bytes = budget / 2 + 1;
    CHECK_FALSE(PlanTraining(t.graph, options).ok());
  }
}

TEST_CASE("headroom: the maximum's peak under a global batch is taken with accumulation",
          "[planner]") {
  // Under a global batch the fit test runs with k = 2 (the gradients of the first micro-batch are
  // live during the second's forward), so the maximum m is the largest whose k = 2 peak fits, and
  // the share printed beside it ("m=40 at N% of the budget") must be that k = 2 peak, not the
  // k = 1 one (issue 43: "m=3 at 87%" while m=2 sat at 93%).
  const TestGraph t = PlannerMlp();
  PlannerOptions options = OptionsFittingExactly(t.graph, 40, /*k=*/2);
  const int64_t budget = ExactPeak(t.graph, 40, 2);
  REQUIRE(ExactPeak(t.graph, 41, 2) > budget);
  REQUIRE(ExactPeak(t.graph, 40, 1) < budget);  // the k = 1 peak is the wrong, smaller figure
  options.global_batch = 400;
  options.headroom.bytes = budget - ExactPeak(t.graph, 30, 2);
  const TrainingPlan plan = PlanTraining(t.graph, options).value();
  CHECK(plan.largest_fitting_micro_batch == 40);
  CHECK(plan.largest_fitting_peak_bytes == budget);
}

TEST_CASE("knee: the smallest power of two within the tolerance of the best rate", "[planner]") {
  // The rule checked against plans of fixed micro-batches (an independent path): the knee is a
  // power of two or the largest, its samples/s is within 2% of the best of those compared, and
  // the power of two below it is not.
  const TestGraph t = PlannerMlp();
  PlannerOptions options = OptionsFittingExactly(t.graph, 1000);
  options.knee_tolerance = 0.02;
  const TrainingPlan plan = PlanTraining(t.graph, options).value();
  REQUIRE(plan.largest_within_headroom == 1000);
  auto rate_at = [&](int64_t m) {
    PlannerOptions fixed = options;
    fixed.micro_batch = m;
    return PlanTraining(t.graph, fixed).value().chosen.samples_per_second;
  };
  double best = rate_at(1000);
  for (int64_t p = 1; p < 1000; p *= 2) best = std::max(best, rate_at(p));
  const int64_t m = plan.chosen.micro_batch;
  CHECK(plan.chosen.samples_per_second >= 0.98 * best);
  if (m < 1000) {
    CHECK((m & (m - 1)) == 0);
    CHECK(plan.knee);
    CHECK(plan.knee_best_samples_per_second == Approx(best));
  }
  if (m > 1) CHECK(rate_at(m / 2) < 0.98 * best);
  // --knee 0: the largest.
  options.knee_tolerance = 0;
  CHECK(PlanTraining(t.graph, options).value().chosen.micro_batch == 1000);
}

TEST_CASE("knee: --knee text", "[planner]") {
  CHECK(ParseKneeTolerance("2%").value() == Approx(0.02));
  CHECK(ParseKneeTolerance("0").value() == 0);
  CHECK(ParseKneeTolerance("0%").value() == 0);
  CHECK_FALSE(ParseKneeTolerance("2").ok());
  CHECK_FALSE(ParseKneeTolerance("50%").ok());
  CHECK_FALSE(ParseKneeTolerance("-1%").ok());
}

TEST_CASE("headroom: a fraction of the budget, rounded down to a byte", "[planner]") {
  // 5% of 1000 B = 50 B; 5% of 1001 B = 50.05 -> 50 B; plus a fixed part of 7 B.
  CHECK(Headroom{.fraction = 0.05}.BytesOf(1000) == 50);
  CHECK(Headroom{.fraction = 0.05}.BytesOf(1001) == 50);
  CHECK(Headroom{.fraction = 0.05, .bytes = 7}.BytesOf(1000) == 57);
  CHECK(Headroom{}.BytesOf(1000) == 0);
}

TEST_CASE("headroom: --headroom text", "[planner]") {
  CHECK(ParseHeadroom("5%").value().fraction == Approx(0.05));
  CHECK(ParseHeadroom("5%").value().bytes == 0);
  CHECK(ParseHeadroom("0").value().BytesOf(1000) == 0);
  CHECK(ParseHeadroom("0%").value().BytesOf(1000) == 0);
  CHECK(ParseHeadroom("50%").value().fraction == Approx(0.5));
  CHECK(ParseHeadroom("1G").value().bytes == int64_t{1} << 30);  // G = GiB
  CHECK(ParseHeadroom("1G").value().fraction == 0);
  CHECK(ParseHeadroom("60%").error().message ==
        "must be between 0% and 50% of the budget, got '60%'");
  CHECK(ParseHeadroom("-5%").error().message ==
        "must be between 0% and 50% of the budget, got '-5%'");
  CHECK(ParseHeadroom("-1G").error().message == "must not be negative, got '-1G'");
  CHECK_FALSE(ParseHeadroom("x%").ok());
  CHECK_FALSE(ParseHeadroom("%").ok());
  CHECK_FALSE(ParseHeadroom("lots").ok());
}

}  // namespace
}  // namespace memplan::testing
