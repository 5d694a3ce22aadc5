#include "analyzer/report/timeline_chart.h"

#include <algorithm>

#include "analyzer/report/analysis_report.h"
#include "analyzer/vocabulary/enum_table.h"

namespace memplan {
namespace {

std::string PhaseOf(const TrainingProgram& program, const ExecutionPoint& at) {
  if (at.iteration < 0) return "setup";
  return std::string(CoarsePhaseNameAt(program, at.step));
}

bool SamePoint(const ExecutionPoint& a, const ExecutionPoint& b) {
  return a.step == b.step && a.iteration == b.iteration && a.micro_batch == b.micro_batch;
}

std::vector<TimelinePhaseBand> PhaseBands(const TrainingProgram& program,
                                          const std::vector<TimelinePoint>& timeline) {
  std::vector<TimelinePhaseBand> bands;
  for (size_t i = 0; i < timeline.size(); ++i) {
    const ExecutionPoint& at = timeline[i].at;
    std::string phase = PhaseOf(program, at);
    if (!bands.empty() && bands.back().phase == phase && bands.back().iteration == at.iteration &&
        bands.back().micro_batch == at.micro_batch) {
      bands.back().end = i + 1;
      continue;
    }
    bands.push_back(TimelinePhaseBand{i, i + 1, std::move(phase), at.iteration, at.micro_batch});
  }
  return bands;
}

}  // namespace

std::string_view BandShortLabel(const TimelinePhaseBand& band) {
  if (band.phase == "forward") return "fwd";
  if (band.phase == "backward") return "bwd";
  if (band.phase == "optimizer") return "opt";
  return band.phase;
}

std::string BandTitle(const TimelinePhaseBand& band) {
  if (band.iteration < 0) return "setup";
  std::string title = "iteration " + std::to_string(band.iteration + 1);
  if (band.micro_batch >= 0) title += ", micro-batch " + std::to_string(band.micro_batch + 1);
  return title + ": " + band.phase;
}

TimelineChart BuildTimelineChart(const TrainingPlan& plan, const TimelineChartOptions& options) {
  const SimulationResult& sim = plan.simulation;
  const std::vector<TimelinePoint>& timeline = sim.timeline;
  TimelineChart chart;
  chart.num_points = timeline.size();
  if (timeline.empty()) return chart;
  chart.buckets = DownsampleTimeline(timeline, options.max_points);
  chart.bands = PhaseBands(plan.program, timeline);

  for (MemoryCategory c : kAllMemoryCategories) {
    bool used =
        std::any_of(chart.buckets.begin(), chart.buckets.end(),
                    [&](const TimelineBucket& b) { return timeline[b.kept].by_category[c] > 0; });
    if (used) chart.categories.push_back(c);
  }

  chart.has_peak = true;
  auto match = std::find_if(timeline.begin(), timeline.end(),
                            [&](const TimelinePoint& p) { return SamePoint(p.at, sim.peak_at); });
  if (match == timeline.end()) {
    match = std::max_element(
        timeline.begin(), timeline.end(),
        [](const TimelinePoint& a, const TimelinePoint& b) { return a.live_bytes < b.live_bytes; });
  }
  chart.peak = static_cast<size_t>(match - timeline.begin());
  chart.peak_bytes = match->live_bytes;
  chart.peak_step = sim.peak_step_name.empty() && match->at.step >= 0
                        ? plan.program.step(match->at.step).name
                        : sim.peak_step_name;

  for (const TimelineBucket& b : chart.buckets) {
    const TimelinePoint& p = timeline[b.kept];
    chart.max_bytes = std::max({chart.max_bytes, p.live_bytes, p.reserved_bytes});
    if (p.reserved_bytes != p.live_bytes) chart.show_reserved = true;
  }
  return chart;
}

// Tableau 10: distinguishable for the common colour-vision deficiencies, one hue per category.
constexpr EnumTable<MemoryCategory, std::string_view, 7> kCategoryColors = {{
    {MemoryCategory::kParameters, "#4e79a7"},
    {MemoryCategory::kGradients, "#f28e2b"},
    {MemoryCategory::kOptimizerState, "#e15759"},
    {MemoryCategory::kActivations, "#76b7b2"},
    {MemoryCategory::kTransients, "#59a14f"},
    {MemoryCategory::kWorkspace, "#edc948"},
    {MemoryCategory::kOther, "#b07aa1"},
}};
static_assert(ListsEvery(kCategoryColors, kMemoryCategoryNames));

std::string_view MemoryCategoryColor(MemoryCategory category) {
  return ValueOf(kCategoryColors, category);
}

}  // namespace memplan
