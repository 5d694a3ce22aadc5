#pragma once
// Replays a recompute schedule on a chain, operation by operation, with explicit allocations and
// frees of every activation, saved set and gradient (chain.h gives the operations). It is the
// reference the DP planner's closed-form segment peaks are tested against, and how every planner
// fills RecomputeSchedule::predicted_peak_bytes.
//
// Event order (held memory is everything live; the peak is checked at each allocation and while
// each operation's transient overhead is live):
//
//   forward:   for each segment in order, for each stage k in it:
//                stored:     alloc a_k, saved_k; transient fwd_k
//                recomputed: alloc a_k; transient fwd_k; free a_{k-1} unless k is the segment's
//                            first stage (its input is kept)
//   loss:      alloc d_{L-1}; if the last segment is recomputed, free a_{L-1}
//   backward:  for each segment in reverse:
//                recomputed: for k = first..last: alloc a_k, saved_k; transient fwd_k
//                for k = last..first: alloc d_{k-1} (k > 0); transient bwd_k;
//                            free d_k, a_k, saved_k; at the segment's first stage, free a_{k-1}
//                            if stage k-1 is recomputed (that segment re-creates it)
//
// The chain input a_in stays live throughout.

#include <cstdint>

#include "analyzer/recompute/chain.h"
#include "analyzer/recompute/recompute_schedule.h"

namespace memplan {

struct ChainSimulation {
  int64_t peak_bytes = 0;
  double total_time = 0;  // forward + backward + recompute
  double added_time = 0;  // recompute only
};

// REQUIRES: the schedule's segments cover the chain's stages in order (MakeRecomputeSchedule
// checks this); a violation is an internal invariant failure.
ChainSimulation SimulateChainSchedule(const Chain& chain,
                                      const std::vector<ChainSegment>& segments);

}  // namespace memplan
