#include "analyzer/recompute/baseline_planners.h"

#include <cmath>
#include <vector>

namespace memplan {

Expected<RecomputeSchedule> PlanNoRecompute(const Chain& chain) {
  MEMPLAN_RETURN_IF_ERROR(ValidateChain(chain));
  return MakeRecomputeSchedule(chain, {{0, chain.num_stages() - 1, SegmentMode::kStored}}, "none");
}

Expected<RecomputeSchedule> PlanRecomputeAll(const Chain& chain) {
  MEMPLAN_RETURN_IF_ERROR(ValidateChain(chain));
  std::vector<ChainSegment> segments;
  for (int k = 0; k < chain.num_stages(); ++k) segments.push_back({k, k, SegmentMode::kRecomputed});
  return MakeRecomputeSchedule(chain, std::move(segments), "all");
}

Expected<RecomputeSchedule> PlanSqrtCheckpoints(const Chain& chain,
                                                const SqrtCheckpointOptions& options) {
  MEMPLAN_RETURN_IF_ERROR(ValidateChain(chain));
  const int num_stages = chain.num_stages();
  const double root = std::sqrt(static_cast<double>(num_stages));

  // Segment boundaries: each entry is the first stage of a segment.
  std::vector<int> starts = {0};
  if (options.spacing == SqrtSpacing::kByStageCount) {
    const int length = static_cast<int>(std::ceil(root));
    for (int k = length; k < num_stages; k += length) starts.push_back(k);
  } else {
    int64_t total_stored = 0;
    for (int k = 0; k < num_stages; ++k) total_stored += chain.StoredBytesOf(k);
    const double target = static_cast<double>(total_stored) / root;
    double in_segment = 0;
    for (int k = 0; k < num_stages; ++k) {
      in_segment += static_cast<double>(chain.StoredBytesOf(k));
      if (in_segment >= target && k + 1 < num_stages) {
        starts.push_back(k + 1);
        in_segment = 0;
      }
    }
  }

  std::vector<ChainSegment> segments;
  for (size_t s = 0; s < starts.size(); ++s) {
    const int last = s + 1 < starts.size() ? starts[s + 1] - 1 : num_stages - 1;
    const bool is_last_segment = s + 1 == starts.size();
    segments.push_back(
        {starts[s], last, is_last_segment ? SegmentMode::kStored : SegmentMode::kRecomputed});
  }
  return MakeRecomputeSchedule(
      chain, std::move(segments),
      options.spacing == SqrtSpacing::kByStageCount ? "sqrt" : "sqrt-memory");
}

}  // namespace memplan
