#pragma once
// What a chart of a plan's memory timeline shows, apart from how it is drawn (the static SVG of
// `analyze --svg` and the HTML report draw the same TimelineChart): the downsampled points, the
// phase bands (setup, then per iteration each replayed micro-batch's forward and backward and the
// optimizer phase), the peak and the categories worth a layer.
//
// The x axis is the executed-step index: position i in SimulationResult::timeline, drawn as the
// interval [i, i+1) because a point is the high-water mark of one step.

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "analyzer/planning/planner.h"
#include "analyzer/program/memory_category.h"
#include "analyzer/report/timeline_downsample.h"

namespace memplan {

// A run of consecutive executed steps in one phase, timeline indices [begin, end).
struct TimelinePhaseBand {
  size_t begin = 0;
  size_t end = 0;
  std::string phase;         // "setup" | "forward" | "backward" | "optimizer"
  int iteration = -1;        // optimizer step, 0-based; -1 for setup
  int64_t micro_batch = -1;  // 0-based; -1 for setup and the optimizer phase
};

// "setup", "fwd", "bwd", "opt": the label drawn inside a band.
std::string_view BandShortLabel(const TimelinePhaseBand& band);
// "iteration 1, micro-batch 2: backward" (1-based for people).
std::string BandTitle(const TimelinePhaseBand& band);

struct TimelineChartOptions {
  // Points drawn at most. A 1280-px-wide chart cannot show more than about one point per pixel;
  // 2000 keeps the HTML small (tens of KiB of data) while every bucket still spans < 1 px there.
  size_t max_points = 2000;
};

struct TimelineChart {
  size_t num_points = 0;  // timeline length: the x axis spans [0, num_points)
  std::vector<TimelineBucket> buckets;
  std::vector<TimelinePhaseBand> bands;
  // Categories with bytes at some kept point, in stacking order (bottom first).
  std::vector<MemoryCategory> categories;
  bool has_peak = false;   // false only for an empty timeline
  size_t peak = 0;         // timeline index of the simulation's peak
  int64_t peak_bytes = 0;  // live bytes there
  std::string peak_step;   // "backward Conv_3"
  // Whether the allocator model's reserved bytes are drawn as a line (the caching model: what
  // must fit the budget), and the largest y value of the data (live or reserved).
  bool show_reserved = false;
  int64_t max_bytes = 0;
};

// Builds the chart of `plan.simulation.timeline`. The peak is the point at
// plan.simulation.peak_at (the largest live bytes if no point matches it).
TimelineChart BuildTimelineChart(const TrainingPlan& plan,
                                 const TimelineChartOptions& options = {});

// The fill colour of a category's layer ("#4e79a7"), the same in every chart and legend.
std::string_view MemoryCategoryColor(MemoryCategory category);

}  // namespace memplan
