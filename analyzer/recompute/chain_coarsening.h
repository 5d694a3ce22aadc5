#pragma once
// Merging runs of adjacent stages into "super-stages", so the O(L^2 * slots) DP stays fast on long
// chains. A coarse schedule expands back to the fine chain stage for stage (a coarse segment
// covers the fine stages of its groups, with the same mode).
//
// The merged stage is conservative: its sizes and overheads are chosen so that, for every
// schedule on the coarse chain, the expanded schedule's exact peak on the fine chain is at most
// the coarse chain's peak. What coarsening costs is optimality only: checkpoints can sit only on
// group boundaries (docs/recompute.md).

#include <vector>

#include "analyzer/recompute/chain.h"
#include "analyzer/recompute/recompute_schedule.h"

namespace memplan {

struct CoarseChain {
  Chain chain;                   // one stage per group
  std::vector<int> group_first;  // fine index of each group's first stage
  std::vector<int> group_last;   // fine index of each group's last stage (inclusive)
};

// Splits the stages into min(max_stages, L) groups of consecutive stages with as equal stage
// counts as possible, and merges each group. REQUIRES: max_stages >= 1.
CoarseChain CoarsenChain(const Chain& chain, int max_stages);

// The merged stage for fine stages [first, last] of `chain` (exposed for tests).
ChainStage MergeStages(const Chain& chain, int first, int last);

// A coarse schedule's segments in fine stage indices.
std::vector<ChainSegment> ExpandSegments(const CoarseChain& coarse,
                                         const std::vector<ChainSegment>& coarse_segments);

}  // namespace memplan
