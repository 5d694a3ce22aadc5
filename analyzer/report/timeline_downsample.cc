#include "analyzer/report/timeline_downsample.h"

#include "graph/expected.h"

namespace memplan {

std::vector<TimelineBucket> DownsampleTimeline(const std::vector<TimelinePoint>& timeline,
                                               size_t max_points) {
  MEMPLAN_CHECK(max_points >= 1);
  const size_t n = timeline.size();
  const size_t buckets = n < max_points ? n : max_points;
  std::vector<TimelineBucket> result;
  result.reserve(buckets);
  for (size_t b = 0; b < buckets; ++b) {
    // Bucket bounds b*n/buckets spread the remainder evenly; n*buckets fits easily in size_t for
    // any timeline that fits in memory.
    TimelineBucket bucket;
    bucket.begin = b * n / buckets;
    bucket.end = (b + 1) * n / buckets;
    bucket.kept = bucket.begin;
    for (size_t i = bucket.begin + 1; i < bucket.end; ++i) {
      if (timeline[i].live_bytes > timeline[bucket.kept].live_bytes) bucket.kept = i;
    }
    result.push_back(bucket);
  }
  return result;
}

}  // namespace memplan
