#pragma once
// Downsampling a memory timeline for charts. A timeline has one point per executed step (tens of
// thousands for a large model), far more than a chart has pixels, so charts draw buckets of
// consecutive points. Each bucket is drawn with its point of most live bytes: a chart of the
// downsampled timeline still shows the true peak, at its own step, and a stacked chart stays
// consistent (the categories of one real point always sum to that point's live bytes).
//
//     timeline:  0 1 2 3 4 5 6 7 8 9        max_points = 3, n = 10
//     buckets:  [0 1 2][3 4 5][6 7 8 9]     bucket b = [b*n/3, (b+1)*n/3)
//     kept:       argmax  argmax  argmax     (first one on ties)

#include <cstddef>
#include <vector>

#include "analyzer/simulation/simulator.h"

namespace memplan {

// Consecutive timeline points [begin, end) drawn as one; `kept` is the index of the point shown.
struct TimelineBucket {
  size_t begin = 0;
  size_t end = 0;
  size_t kept = 0;
};

// Splits `timeline` into at most `max_points` contiguous buckets that cover it in order (one per
// point when it is short enough) and keeps, per bucket, the point with the most live bytes.
// REQUIRES: max_points >= 1.
std::vector<TimelineBucket> DownsampleTimeline(const std::vector<TimelinePoint>& timeline,
                                               size_t max_points);

}  // namespace memplan
