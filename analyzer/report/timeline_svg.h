#pragma once
// The memory timeline as a static SVG (no script, no external reference): live bytes stacked by
// category over the executed steps, phase bands (setup / forward / backward / optimizer), the
// caching allocator's reserved bytes, the budget and the annotated peak. `memplan analyze --svg`
// writes it; the HTML report inlines the same picture and adds interaction on top.
//
// Structure (tests and the HTML report's script rely on it):
//   <svg class="memplan-timeline" id="timeline-svg" data-plot-{left,right,top,bottom}
//        data-points ...>
//     <rect class="band band-{setup|forward|backward|optimizer}"> per phase band
//     <path class="area" data-category="{category}"> per category with bytes, bottom first
//     <path class="reserved-line">      when the allocator model reserves more than is live
//     <line class="budget-line">        when the budget is within the y scale
//     <g class="peak" data-index="i"><circle cx="x(i + 0.5)" ...>
// x(i) = plot_left + (plot_right - plot_left) * i / data-points.

#include <string>

#include "analyzer/report/analysis_report.h"
#include "analyzer/report/timeline_chart.h"
#include "graph/expected.h"

namespace memplan {

struct TimelineSvgOptions {
  TimelineChartOptions chart;
  double width = 960;
  double height = 400;
  // A standalone file gets the XML declaration and the SVG namespace; an SVG inlined in HTML
  // needs neither (the HTML parser knows <svg>), so the report carries no URL at all.
  bool standalone = true;
  // The budget is drawn as a line only when it is below this multiple of the data's maximum: a
  // budget far above the peak (a small model on a large GPU) would flatten every curve, so it is
  // then written as a label above the plot instead.
  double budget_in_scale_factor = 1.5;
  // Headroom above the highest value so the peak label fits under the top of the plot.
  double headroom_fraction = 0.08;
};

// REQUIRES: report.plan and report.options set.
std::string RenderTimelineSvg(const AnalysisReport& report, const TimelineSvgOptions& options = {});

// Renders the standalone SVG to `path`. Error: the file cannot be written.
Status WriteTimelineSvg(const AnalysisReport& report, const std::string& path);

}  // namespace memplan
