#pragma once
// The optimal recompute planner for a chain: dynamic programming over segments that finds the
// single-level, store-all-in-segment schedule (recompute_schedule.h) with the least total time
// whose peak fits a memory budget. The facts it relies on are those of Rotor (Beaumont et al.,
// "Optimal checkpointing for heterogeneous chains", 2019) restricted to one level of
// recomputation; docs/recompute.md derives the recurrence.
//
// Discretisation: the budget is cut into `memory_slots` slots of
// slot_bytes = ceil(budget / memory_slots) bytes; every size of the chain (each field of each
// stage, separately) is rounded UP to whole slots, and the budget DOWN. The DP is exact on that
// rounded chain. Because every term of every peak only grows by rounding, the true peak of the
// returned schedule never exceeds the budget; the price is that schedules whose true peak is
// within (number of tensors in the peak sum) x slot_bytes of the budget may be missed.
//
// Complexity: O(L^2 * memory_slots) time in the worst case (segments stop growing once their own
// stored bytes exceed the budget, which usually cuts this far down) and O(L * memory_slots)
// memory. Chains longer than `max_stages` are first coarsened (chain_coarsening.h).

#include <cstdint>

#include "analyzer/recompute/chain.h"
#include "analyzer/recompute/recompute_schedule.h"
#include "graph/expected.h"

namespace memplan {

// 8000 slots: rounding costs at most 1/8000 of the budget per tensor in a peak sum (a peak sums
// up to about one kept tensor per stage, so up to ~3% of the budget with 256 stages). Measured on
// a 2-core x86_64 VM, a 256-stage plan takes at most ~0.3 CPU-seconds (docs/recompute.md).
inline constexpr int kDefaultMemorySlots = 8000;
// Longer chains are merged into this many super-stages before planning (chain_coarsening.h).
inline constexpr int kDefaultMaxPlanningStages = 256;

struct ChainPlannerOptions {
  // Number of memory slots the budget is cut into (see the discretisation note above).
  int memory_slots = kDefaultMemorySlots;
  // Chains with more stages are coarsened to this many; 0 never coarsens (the DP table then takes
  // 12 bytes x (L+1) x (memory_slots+1): ~1 GB at 10000 stages and 8000 slots).
  int max_stages = kDefaultMaxPlanningStages;
};

// The fastest schedule whose peak (chain_schedule_simulator.h) is at most `memory_budget` bytes:
// the DP's (planner "optimal"), unless one of the simple schedules of baseline_planners.h fits
// exactly and is faster — rounding can hide it from the DP, e.g. no recompute at a budget equal to
// its peak — then that one (planner "optimal(none)", "optimal(sqrt)", ...). Error when nothing
// fits, naming the budget and what checkpointing every stage would need.
Expected<RecomputeSchedule> PlanOptimalChain(const Chain& chain, int64_t memory_budget,
                                             const ChainPlannerOptions& options = {});

// The discretisation PlanOptimalChain uses, exposed so tests can run a reference on exactly the
// same rounded chain: ceil(budget / memory_slots), at least 1.
int64_t SlotBytesFor(int64_t memory_budget, int memory_slots);
// Every size field of the chain rounded up to whole slots, in slot units.
Chain RoundChainUpToSlots(const Chain& chain, int64_t slot_bytes);

}  // namespace memplan
