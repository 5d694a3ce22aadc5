// The chain recompute planners against hand-derived numbers and against an exhaustive reference
// (recompute_brute_force.h) on random small chains.

#include <algorithm>
#include <cmath>
#include <random>
#include <string>

#include <catch2/catch.hpp>

#include "analyzer/recompute/baseline_planners.h"
#include "analyzer/recompute/chain.h"
#include "analyzer/recompute/chain_coarsening.h"
#include "analyzer/recompute/chain_schedule_simulator.h"
#include "analyzer/recompute/optimal_chain_planner.h"
#include "analyzer/recompute/recompute_schedule.h"
#include "tests/analyzer/recompute/recompute_brute_force.h"

namespace memplan {
namespace {

ChainStage Stage(double f, double b, int64_t out, int64_t saved, int64_t fwd_tmp = 0,
                 int64_t bwd_tmp = 0) {
  ChainStage s;
  s.forward_time = f;
  s.backward_time = b;
  s.output_bytes = out;
  s.saved_bytes = saved;
  s.forward_overhead_bytes = fwd_tmp;
  s.backward_overhead_bytes = bwd_tmp;
  return s;
}

// Input 2 bytes; stages (out, saved, f, b): (4, 6, 1, 2), (4, 10, 2, 4), (2, 4, 1, 2); no
// overheads. abar = 10, 14, 6.
Chain ThreeStageChain() {
  Chain chain;
  chain.input_bytes = 2;
  chain.stages = {Stage(1, 2, 4, 6), Stage(2, 4, 4, 10), Stage(1, 2, 2, 4)};
  return chain;
}

bool NearlyEqual(double a, double b) {
  return std::abs(a - b) <= 1e-9 * std::max({1.0, std::abs(a), std::abs(b)});
}

TEST_CASE("simulator: three-stage chain peaks derived by hand", "[recompute]") {
  const Chain chain = ThreeStageChain();
  const auto S = SegmentMode::kStored;
  const auto R = SegmentMode::kRecomputed;
  // No recompute: forward holds 2 + 10 + 14 + 6 = 32, the loss adds d2 (2) = 34, B_2 adds d1 (4)
  // = 38; later steps hold less. Time: forward 4 + backward 8 = 12.
  ChainSimulation none = SimulateChainSchedule(chain, {{0, 2, S}});
  CHECK(none.peak_bytes == 38);
  CHECK(none.total_time == 12);
  CHECK(none.added_time == 0);
  // Stage 0 recomputed alone: forward 2 + a0 4 + 14 + 6 = 26, loss 28, B_2 32 (then 24), B_1 28
  // (then 10, a0 freed: 6), re-forward F^all_0 16, B_0 16. Peak 32, added 1.
  ChainSimulation r0 = SimulateChainSchedule(chain, {{0, 0, R}, {1, 1, S}, {2, 2, S}});
  CHECK(r0.peak_bytes == 32);
  CHECK(r0.added_time == 1);
  CHECK(r0.total_time == 13);
  // Stage 1 recomputed alone: forward 2 + 10 + a1 4 + 6 = 22, loss 24, B_2 28 (then 20, a1 freed:
  // 16), re-forward F^all_1 30, B_1 adds d0 (4): 34. Peak 34, added 2.
  CHECK(SimulateChainSchedule(chain, {{0, 0, S}, {1, 1, R}, {2, 2, S}}).peak_bytes == 34);
  // Stages 0 and 1 in separate recomputed segments: forward 2 + 4 + 4 + 6 = 16, loss 18, B_2 22
  // (then 10), re-forward F^all_1 24, B_1 28 (then 6), re-forward F^all_0 16. Peak 28, added 3.
  ChainSimulation r01 = SimulateChainSchedule(chain, {{0, 0, R}, {1, 1, R}, {2, 2, S}});
  CHECK(r01.peak_bytes == 28);
  CHECK(r01.added_time == 3);
  // Stages 0-1 as ONE recomputed segment: after B_2 only 2 + d1 4 are held (6); re-forward F^all_0
  // 16, F^all_1 30, B_1 adds d0: 34.
  CHECK(SimulateChainSchedule(chain, {{0, 1, R}, {2, 2, S}}).peak_bytes == 34);
}

TEST_CASE("optimal planner: three-stage chain by budget", "[recompute]") {
  const Chain chain = ThreeStageChain();
  // Every schedule holds, during B_1, the input 2 + at least a0 4 + abar1 14 + d1 4 + d0 4 = 28:
  // 28 is the least feasible budget, reached by {0 R, 1 R, 2 S} (added 3, see the simulator test).
  struct Case {
    int64_t budget;
    double added;
  };
  for (Case c : {Case{38, 0}, Case{100, 0}, Case{37, 1}, Case{32, 1}, Case{31, 3}, Case{28, 3}}) {
    INFO("budget " << c.budget);
    auto plan = PlanOptimalChain(chain, c.budget);
    REQUIRE(plan.ok());
    CHECK(plan->added_time == c.added);
    CHECK(plan->total_time == 12 + c.added);
    CHECK(plan->predicted_peak_bytes <= c.budget);
    CHECK(plan->planner == "optimal");
  }
  auto at_32 = PlanOptimalChain(chain, 32);
  REQUIRE(at_32.ok());
  CHECK(at_32->IsRecomputed(0));
  CHECK_FALSE(at_32->IsRecomputed(1));
  CHECK(at_32->CheckpointStages() == std::vector<int>{0});

  auto too_small = PlanOptimalChain(chain, 27);
  REQUIRE_FALSE(too_small.ok());
  // Checkpointing every stage needs 28 (simulator test: {0 R, 1 R, 2 R} also peaks in B_1).
  CHECK(too_small.error().message ==
        "no recompute schedule fits an activation budget of 27 bytes for this 3-stage chain; "
        "checkpointing every stage needs 28 bytes");
}

TEST_CASE("baseline planners: shapes of the schedules", "[recompute]") {
  Chain chain;
  for (int k = 0; k < 10; ++k) chain.stages.push_back(Stage(1, 2, 4, 4));
  auto sqrt_plan = PlanSqrtCheckpoints(chain);
  REQUIRE(sqrt_plan.ok());
  // ceil(sqrt(10)) = 4: [0-3 R], [4-7 R], [8-9 S].
  CHECK(sqrt_plan->segments == std::vector<ChainSegment>{{0, 3, SegmentMode::kRecomputed},
                                                         {4, 7, SegmentMode::kRecomputed},
                                                         {8, 9, SegmentMode::kStored}});
  CHECK(sqrt_plan->added_time == 8);
  CHECK(sqrt_plan->CheckpointStages() == std::vector<int>{3, 7});

  // By memory: total stored 80, target 80 / sqrt(10) = 25.3: segments close after 4 stages (32).
  auto by_memory = PlanSqrtCheckpoints(chain, {SqrtSpacing::kByMemory});
  REQUIRE(by_memory.ok());
  CHECK(by_memory->segments.size() == 3);

  auto none = PlanNoRecompute(chain);
  REQUIRE(none.ok());
  CHECK(none->NumRecomputedStages() == 0);
  CHECK(none->added_time == 0);
  auto all = PlanRecomputeAll(chain);
  REQUIRE(all.ok());
  CHECK(all->NumRecomputedStages() == 10);
  CHECK(all->added_time == 10);
  CHECK(all->CheckpointStages().size() == 9);  // every stage output but the last
}

Chain RandomChain(std::mt19937& rng, int num_stages, int64_t size_scale) {
  std::uniform_int_distribution<int64_t> out(1, 40), saved(0, 60), tmp(0, 20), input(0, 30);
  std::uniform_real_distribution<double> time(0.1, 2.0), ratio(1.0, 3.0);
  Chain chain;
  chain.input_bytes = input(rng) * size_scale;
  for (int k = 0; k < num_stages; ++k) {
    const double f = time(rng);
    chain.stages.push_back(Stage(f, f * ratio(rng), out(rng) * size_scale, saved(rng) * size_scale,
                                 tmp(rng) * size_scale, tmp(rng) * size_scale));
  }
  return chain;
}

// Budgets from the least feasible peak to the no-recompute peak, both ends included.
std::vector<int64_t> BudgetGrid(int64_t lo, int64_t hi, int points) {
  std::vector<int64_t> grid = {lo, hi};
  for (int i = 1; i < points; ++i) grid.push_back(lo + (hi - lo) * i / points);
  return grid;
}

TEST_CASE("optimal planner equals brute force on random chains (exact sizes)", "[recompute]") {
  std::mt19937 rng(20240611);
  std::uniform_int_distribution<int> length(1, 10);
  int compared = 0;
  for (int trial = 0; trial < 320; ++trial) {
    // Peaks stay well under kDefaultMemorySlots bytes (checked below): one slot is one byte, so
    // the DP sees the exact chain.
    const Chain chain = RandomChain(rng, trial < 316 ? length(rng) : 12, /*size_scale=*/1);
    const auto all = testing::EnumerateSchedules(chain);
    const int64_t min_peak = testing::MinPeak(all);
    auto none = PlanNoRecompute(chain);
    auto sqrt_plan = PlanSqrtCheckpoints(chain);
    auto recompute_all = PlanRecomputeAll(chain);
    REQUIRE(none.ok());
    REQUIRE(sqrt_plan.ok());
    REQUIRE(recompute_all.ok());
    REQUIRE(none->predicted_peak_bytes < kDefaultMemorySlots);

    for (int64_t budget : BudgetGrid(min_peak, none->predicted_peak_bytes, 12)) {
      INFO("trial " << trial << ", " << chain.num_stages() << " stages, budget " << budget);
      auto plan = PlanOptimalChain(chain, budget);
      REQUIRE(plan.ok());
      INFO("plan " << DescribeSchedule(*plan));
      const std::optional<double> best = testing::BestAddedTime(all, budget);
      REQUIRE(best.has_value());
      CHECK(NearlyEqual(plan->added_time, *best));
      CHECK(plan->predicted_peak_bytes <= budget);
      // The simple schedules are in the family: when they fit, they never beat the optimum.
      for (const RecomputeSchedule* simple : {&*none, &*sqrt_plan, &*recompute_all}) {
        if (simple->predicted_peak_bytes <= budget) {
          CHECK(plan->added_time <= simple->added_time + 1e-9);
        }
      }
      if (budget >= none->predicted_peak_bytes) CHECK(plan->NumRecomputedStages() == 0);
      ++compared;
    }
    if (min_peak > 0) {
      auto infeasible = PlanOptimalChain(chain, min_peak - 1);
      CHECK_FALSE(infeasible.ok());
    }
  }
  CHECK(compared > 3000);
}

TEST_CASE("optimal planner equals brute force on the slot-rounded chain", "[recompute]") {
  std::mt19937 rng(7);
  std::uniform_int_distribution<int> length(2, 9);
  ChainPlannerOptions options;
  options.memory_slots = 60;  // coarse slots, so rounding matters
  int rounded_feasible = 0;
  for (int trial = 0; trial < 120; ++trial) {
    const Chain chain = RandomChain(rng, length(rng), /*size_scale=*/997);
    const auto exact = testing::EnumerateSchedules(chain);
    auto none = PlanNoRecompute(chain);
    REQUIRE(none.ok());
    for (int64_t budget :
         BudgetGrid(testing::MinPeak(exact), none->predicted_peak_bytes + 5000, 10)) {
      INFO("trial " << trial << ", budget " << budget);
      const int64_t slot = SlotBytesFor(budget, options.memory_slots);
      const auto rounded = testing::EnumerateSchedules(RoundChainUpToSlots(chain, slot));
      const std::optional<double> best = testing::BestAddedTime(rounded, budget / slot);
      auto plan = PlanOptimalChain(chain, budget, options);
      const double exact_best = *testing::BestAddedTime(exact, budget);
      if (best) {
        REQUIRE(plan.ok());
        CHECK(plan->predicted_peak_bytes <= budget);
        // Conservative: the optimum of the rounded chain is never better than the exact one.
        CHECK(*best >= exact_best - 1e-9);
        // The DP's own answer is the rounded optimum; a simple schedule replaces it only when
        // it fits exactly and is faster.
        if (plan->planner == "optimal") {
          CHECK(NearlyEqual(plan->added_time, *best));
          ++rounded_feasible;
        } else {
          CHECK(plan->added_time <= *best + 1e-9);
        }
        CHECK(plan->added_time >= exact_best - 1e-9);
      } else if (plan.ok()) {
        // Rounding hid every schedule; a simple schedule that fits exactly stands in.
        CHECK(plan->planner.rfind("optimal(", 0) == 0);
        CHECK(plan->predicted_peak_bytes <= budget);
      }
    }
  }
  CHECK(rounded_feasible > 600);
}

TEST_CASE("coarsened chains are conservative", "[recompute]") {
  std::mt19937 rng(99);
  for (int trial = 0; trial < 60; ++trial) {
    const Chain fine = RandomChain(rng, 7 + trial % 20, /*size_scale=*/1);
    const CoarseChain coarse = CoarsenChain(fine, 3 + trial % 4);
    REQUIRE(coarse.chain.num_stages() == std::min(fine.num_stages(), 3 + trial % 4));
    // Every coarse schedule, expanded to the fine chain, peaks no higher and costs the same.
    for (const auto& schedule : testing::EnumerateSchedules(coarse.chain)) {
      const ChainSimulation on_fine =
          SimulateChainSchedule(fine, ExpandSegments(coarse, schedule.segments));
      CHECK(on_fine.peak_bytes <= schedule.peak_bytes);
      CHECK(NearlyEqual(on_fine.added_time, schedule.added_time));
    }
  }
  // The planner coarsens above max_stages and still respects the budget.
  const Chain long_chain = RandomChain(rng, 40, /*size_scale=*/1000);
  auto none = PlanNoRecompute(long_chain);
  auto all = PlanRecomputeAll(long_chain);
  REQUIRE(none.ok());
  REQUIRE(all.ok());
  ChainPlannerOptions options;
  options.max_stages = 8;
  const int64_t budget = (none->predicted_peak_bytes + all->predicted_peak_bytes) / 2;
  auto coarse_plan = PlanOptimalChain(long_chain, budget, options);
  auto fine_plan = PlanOptimalChain(long_chain, budget);
  REQUIRE(coarse_plan.ok());
  REQUIRE(fine_plan.ok());
  CHECK(coarse_plan->num_stages() == 40);
  CHECK(coarse_plan->predicted_peak_bytes <= budget);
  CHECK(fine_plan->added_time <= coarse_plan->added_time + 1e-9);
}

TEST_CASE("planner input errors", "[recompute]") {
  CHECK_FALSE(PlanOptimalChain(Chain{}, 100).ok());
  Chain negative = ThreeStageChain();
  negative.stages[1].saved_bytes = -1;
  auto bad = PlanOptimalChain(negative, 100);
  REQUIRE_FALSE(bad.ok());
  CHECK(bad.error().message == "recompute chain stage 1 ('') has a negative or non-finite size");
  CHECK_FALSE(PlanOptimalChain(ThreeStageChain(), -5).ok());
  ChainPlannerOptions zero_slots;
  zero_slots.memory_slots = 0;
  CHECK_FALSE(PlanOptimalChain(ThreeStageChain(), 100, zero_slots).ok());
  CHECK_FALSE(MakeRecomputeSchedule(ThreeStageChain(), {{0, 1, SegmentMode::kStored}}, "x").ok());
}

}  // namespace
}  // namespace memplan
