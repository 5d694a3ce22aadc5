// The fits decision under the caching model (issue 40 item 8, issue 41 item 4): PyTorch's
// allocator releases every fully free cached segment when a cudaMalloc fails and retries
// (release_cached_blocks, c10/cuda/CUDACachingAllocator.cpp), so a plan whose unconstrained
// reserved peak is over the budget still fits when a replay with the budget as the device's
// capacity refuses nothing. The planner must agree with Simulate on a CachingAllocator given
// that capacity, an independent walk of the program.

#include <catch2/catch.hpp>

#include "analyzer/planning/planner.h"
#include "analyzer/simulation/allocator_config.h"
#include "analyzer/simulation/caching_allocator.h"
#include "analyzer/simulation/simulator.h"
#include "tests/analyzer/planning/planner_test_budget.h"

namespace memplan::testing {
namespace {

TEST_CASE("caching plans fit when the excess over the budget is free cached segments",
          "[planner]") {
  TestGraph t = PlannerMlp();
  int releasing = 0;  // cases that fit only by the release
  int refused = 0;    // cases the capacity replay refuses
  for (int64_t m : {512, 1024, 3000, 4096}) {
    PlannerOptions options;
    options.gpu = ResolveGpu("24G").value();
    options.allocator = AllocatorKind::kCaching;
    options.micro_batch = m;
    options.headroom = Headroom{};
    const TrainingPlan unlimited = PlanTraining(t.graph, options).value();
    REQUIRE(unlimited.feasible);
    const int64_t live = unlimited.chosen.exact_peak_bytes;
    const int64_t reserved = unlimited.simulation.peak_reserved_bytes;
    REQUIRE(reserved == unlimited.chosen.peak_bytes);  // far from the budget: no release
    // Budgets from the live peak up to one byte below the unconstrained reserved peak.
    for (int step = 0; step < 8; ++step) {
      const int64_t budget = live + (reserved - 1 - live) * step / 7;
      {
        INFO("m " << m << ", budget " << budget);
        PlannerOptions limited = options;
        limited.gpu.memory_bytes = limited.gpu.context_bytes + budget;
        const TrainingPlan plan = PlanTraining(t.graph, limited).value();
        // The independent walk: the same program under a device of `budget` bytes.
        CachingAllocatorOptions capacity;
        capacity.capacity = budget;
        CachingAllocator model(capacity);
        const SimulationResult walk = Simulate(plan.program, plan.bindings, model).value();
        CHECK(plan.feasible == !walk.out_of_memory);
        if (plan.feasible) {
          CHECK(plan.chosen.peak_bytes == walk.peak_reserved_bytes);
          CHECK(plan.chosen.peak_bytes <= budget);
          CHECK(plan.simulation.peak_reserved_bytes == reserved);  // what a larger card shows
          if (plan.simulation.peak_reserved_bytes > budget) ++releasing;
        } else {
          ++refused;
        }
      }
    }
  }
  INFO("releasing " << releasing << ", refused " << refused);
  // On this MLP every budget below the unconstrained peak is refused (nothing is both cached
  // free and releasable at the peak); the releasing case is measured on llama3_8b in
  // docs/measurements.md. The agreement above is what this test pins.
  CHECK(refused > 0);
}

TEST_CASE("the planner's caching model runs under --alloc-conf's options", "[planner]") {
  // x [3000, 256] -> W1 [256, 512] -> h [3000, 512] fp32 = 6,144,000 B (5.86 MiB). With
  // roundup_power2_divisions:4 a request between 4 and 8 MiB rounds up to the next MiB step
  // (roundup_power2_next_division): h takes 6 MiB = 6,291,456 B instead of 6,144,000.
  TestGraph t = PlannerMlp();
  PlannerOptions options;
  options.gpu = ResolveGpu("24G").value();
  options.allocator = AllocatorKind::kCaching;
  options.micro_batch = 3000;
  options.headroom = Headroom{};
  const TrainingPlan plain = PlanTraining(t.graph, options).value();
  options.alloc_config = ParseAllocatorConfig("roundup_power2_divisions:4").value();
  const TrainingPlan rounded = PlanTraining(t.graph, options).value();
  // The independent walk under the same options.
  CachingAllocator model(options.alloc_config.caching);
  const SimulationResult walk = Simulate(rounded.program, rounded.bindings, model).value();
  CHECK(rounded.chosen.peak_bytes == walk.peak_reserved_bytes);
  CHECK(rounded.simulation.peak_allocated_bytes == walk.peak_allocated_bytes);
  // The rounding is the option's, not the default's: no request rounds lower, and the
  // [3000, 512] buffers (h, its gradient) each round 147,456 B higher.
  CHECK(rounded.simulation.peak_allocated_bytes > plain.simulation.peak_allocated_bytes);
}

}  // namespace
}  // namespace memplan::testing
