#include "analyzer/recompute/chain_coarsening.h"

#include <algorithm>

namespace memplan {

ChainStage MergeStages(const Chain& chain, int first, int last) {
  MEMPLAN_CHECK(first >= 0 && first <= last && last < chain.num_stages());
  auto stage = [&](int k) -> const ChainStage& { return chain.stages[static_cast<size_t>(k)]; };

  ChainStage merged;
  merged.name = stage(last).name;
  merged.output_bytes = stage(last).output_bytes;
  int64_t stored_total = 0;  // |abar| of the group: everything F^all of the group keeps
  for (int k = first; k <= last; ++k) {
    merged.forward_time += stage(k).forward_time;
    merged.backward_time += stage(k).backward_time;
    stored_total += chain.StoredBytesOf(k);
  }
  merged.saved_bytes = stored_total - merged.output_bytes;

  // Forward overhead: the merged F^all peaks at held + stored_total + overhead; the fine stages
  // peak at held + (abar of stages first..k) + fwd_k. The merged F^none peaks at held + a_last +
  // overhead (its input is in `held`); the fine stage k peaks at held + a_{k-1} + a_k + fwd_k,
  // without a_{k-1} for k = first (it is the input). The overhead covers the largest excess.
  int64_t forward_need = 0;
  int64_t stored_prefix = 0;
  for (int k = first; k <= last; ++k) {
    stored_prefix += chain.StoredBytesOf(k);
    const ChainStage& s = stage(k);
    forward_need = std::max(forward_need, stored_prefix + s.forward_overhead_bytes - stored_total);
    const int64_t running_input = k == first ? 0 : stage(k - 1).output_bytes;
    forward_need = std::max(forward_need, running_input + s.output_bytes +
                                              s.forward_overhead_bytes - merged.output_bytes);
  }
  merged.forward_overhead_bytes = forward_need;

  // Backward overhead: merged B peaks at held + stored_total + d_last + d_{first-1} + overhead;
  // fine B_k peaks at held + (abar of first..k) + d_k + d_{k-1} + bwd_k.
  const int64_t merged_backward_base =
      stored_total + merged.output_bytes + chain.InputGradientBytesOf(first);
  int64_t backward_need = 0;
  stored_prefix = 0;
  for (int k = first; k <= last; ++k) {
    stored_prefix += chain.StoredBytesOf(k);
    const int64_t fine_peak = stored_prefix + stage(k).output_bytes +
                              chain.InputGradientBytesOf(k) + stage(k).backward_overhead_bytes;
    backward_need = std::max(backward_need, fine_peak - merged_backward_base);
  }
  merged.backward_overhead_bytes = backward_need;
  return merged;
}

CoarseChain CoarsenChain(const Chain& chain, int max_stages) {
  MEMPLAN_CHECK(max_stages >= 1);
  const int fine = chain.num_stages();
  const int groups = std::min(fine, max_stages);
  CoarseChain coarse;
  coarse.chain.input_bytes = chain.input_bytes;
  for (int g = 0; g < groups; ++g) {
    // Group g covers [g*L/G, (g+1)*L/G): sizes differ by at most one stage. (Moving boundaries to
    // the smallest nearby outputs was tried and measured no better: docs/recompute.md.)
    const int first = static_cast<int>(int64_t{g} * fine / groups);
    const int last = static_cast<int>(int64_t{g + 1} * fine / groups) - 1;
    coarse.group_first.push_back(first);
    coarse.group_last.push_back(last);
    coarse.chain.stages.push_back(MergeStages(chain, first, last));
  }
  return coarse;
}

std::vector<ChainSegment> ExpandSegments(const CoarseChain& coarse,
                                         const std::vector<ChainSegment>& coarse_segments) {
  std::vector<ChainSegment> fine;
  fine.reserve(coarse_segments.size());
  for (const ChainSegment& seg : coarse_segments) {
    fine.push_back({coarse.group_first[static_cast<size_t>(seg.first_stage)],
                    coarse.group_last[static_cast<size_t>(seg.last_stage)], seg.mode});
  }
  return fine;
}

}  // namespace memplan
