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

// 4000 slots: rounding costs at most 1/4000 of the budget per tensor in a peak sum; with the
// stage cap below a whole-model plan of a ~2000-node graph takes well under a second.
inline constexpr int kDefaultMemorySlots = 4000;
// Longer chains are merged into this many super-stages before planning.
inline constexpr int kDefaultMaxPlanningStages = 256;

struct ChainPlannerOptions {
  // Number of memory slots the budget is cut into (see the discretisation note above).
  int memory_slots = kDefaultMemorySlots;
  // Chains with more stages are coarsened to this many; 0 never coarsens.
  int max_stages = kDefaultMaxPlanningStages;
};

// The fastest schedule whose peak (chain_schedule_simulator.h) is at most `memory_budget` bytes.
// When the DP finds nothing on the rounded chain but one of the simple schedules (recompute every
// stage, sqrt, none) fits exactly, the cheapest of those is returned (planner "optimal-fallback").
// Error when nothing fits, naming the budget and what checkpointing every stage would need.
Expected<RecomputeSchedule> PlanOptimalChain(const Chain& chain, int64_t memory_budget,
                                             const ChainPlannerOptions& options = {});

// The discretisation PlanOptimalChain uses, exposed so tests can run a reference on exactly the
// same rounded chain: ceil(budget / memory_slots), at least 1.
int64_t SlotBytesFor(int64_t memory_budget, int memory_slots);
// Every size field of the chain rounded up to whole slots, in slot units.
Chain RoundChainUpToSlots(const Chain& chain, int64_t slot_bytes);

}  // namespace memplan
