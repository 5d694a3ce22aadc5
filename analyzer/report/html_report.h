#pragma once
// `memplan report --html`: one self-contained HTML file (inline CSS and script, no URL) showing
// the plan: the memory timeline stacked by category with phase bands, budget and peak (the same
// SVG as `analyze --svg`, with a hover read-out), the breakdown at the peak, the plan's settings,
// the candidates chart (peak memory against samples/s, the chosen one ringed, the budget marked),
// the candidates table, advice and warnings.
//
// The full `analyze --json` object (memplan/1) and the downsampled timeline are embedded in
// <script type="application/json" id="memplan-data">, so the file is also machine-readable:
//   {"analysis": {...memplan/1...}, "chosen_candidate": i | -1,
//    "timeline": {"points": n, "bands": [[begin, end, phase, iteration, micro_batch]...],
//                 "categories": [...], "colors": [...], "show_reserved": bool,
//                 "begin": [...], "index": [...], "name": [...], "live": [...],
//                 "reserved": [...], "by_category": {category: [...]}}}
// (one entry per drawn bucket in the per-point arrays; see timeline_downsample.h).
// The output is deterministic (no timestamps), so two reports of the same inputs diff clean.

#include <string>

#include "analyzer/report/analysis_report.h"
#include "analyzer/report/timeline_svg.h"
#include "graph/expected.h"

namespace memplan {

struct HtmlReportOptions {
  // The inlined timeline (its `standalone` is ignored: an inline SVG carries no namespace URL).
  TimelineSvgOptions timeline;
};

// REQUIRES: report.graph, report.plan and report.options set.
std::string RenderHtmlReport(const AnalysisReport& report, const HtmlReportOptions& options = {});

// Renders the report to `path`. Error: the file cannot be written.
Status WriteHtmlReport(const AnalysisReport& report, const std::string& path);

// The candidate of `plan.candidates` that is the chosen plan (same m, k, precision and
// recompute), or -1 when none is.
int ChosenCandidateIndex(const TrainingPlan& plan);

}  // namespace memplan
