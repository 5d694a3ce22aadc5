#include <algorithm>
#include <boost/property_tree/ptree.hpp>
#include <boost/property_tree/xml_parser.hpp>
#include <catch2/catch.hpp>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "analyzer/cost/gpu_specs.h"
#include "analyzer/report/timeline_chart.h"
#include "analyzer/report/timeline_svg.h"
#include "graph/onnx_import.h"
#include "tests/analyzer/report/report_test_plan.h"
#include "tests/test_paths.h"

namespace memplan {
namespace {

using boost::property_tree::ptree;

// One parsed element, flattened in document order.
struct Element {
  std::string name;
  std::map<std::string, std::string> attributes;
};

void Flatten(const ptree& tree, std::vector<Element>& out) {
  for (const auto& [key, child] : tree) {
    if (key == "<xmlattr>" || key == "<xmlcomment>") continue;
    Element e;
    e.name = key;
    if (auto attrs = child.get_child_optional("<xmlattr>")) {
      for (const auto& [attr, value] : *attrs) e.attributes[attr] = value.data();
    }
    out.push_back(std::move(e));
    Flatten(child, out);
  }
}

// Parses `svg` as XML (throws on a malformed document: Catch reports it) and flattens it.
std::vector<Element> ParseSvg(const std::string& svg) {
  std::istringstream in(svg);
  ptree tree;
  boost::property_tree::read_xml(in, tree);
  REQUIRE(tree.size() == 1);
  REQUIRE(tree.front().first == "svg");
  std::vector<Element> elements;
  Flatten(tree, elements);
  return elements;
}

// Elements whose class list contains `name`.
std::vector<const Element*> WithClass(const std::vector<Element>& elements,
                                      const std::string& name) {
  std::vector<const Element*> found;
  for (const Element& e : elements) {
    auto it = e.attributes.find("class");
    if (it == e.attributes.end()) continue;
    std::istringstream classes(it->second);
    std::string c;
    while (classes >> c) {
      if (c == name) {
        found.push_back(&e);
        break;
      }
    }
  }
  return found;
}

double Attr(const Element& e, const std::string& name) {
  REQUIRE(e.attributes.count(name) == 1);
  return std::stod(e.attributes.at(name));
}

// The plot area the SVG's root element declares (data-plot-left, -right, -top and -bottom).
struct PlotArea {
  double left = 0, right = 0, top = 0, bottom = 0;
};

PlotArea PlotAreaOf(const std::vector<Element>& elements) {
  const Element& root = elements.front();
  return {Attr(root, "data-plot-left"), Attr(root, "data-plot-right"), Attr(root, "data-plot-top"),
          Attr(root, "data-plot-bottom")};
}

TEST_CASE("the timeline SVG is well-formed with one layer per non-empty category", "[report]") {
  testing::ReportFixture fixture;
  const std::string svg = RenderTimelineSvg(fixture.report);
  std::vector<Element> elements = ParseSvg(svg);
  const Element& root = elements.front();
  CHECK(root.attributes.at("xmlns") == "http://www.w3.org/2000/svg");
  CHECK(root.attributes.at("data-points") == "6");
  CHECK(svg.find("<script") == std::string::npos);

  // Six categories have bytes somewhere (workspace never does), stacked in enum order.
  auto areas = WithClass(elements, "area");
  REQUIRE(areas.size() == 6);
  const char* expected[] = {"parameters",  "gradients",  "optimizer_state",
                            "activations", "transients", "other"};
  for (size_t i = 0; i < 6; ++i) CHECK(areas[i]->attributes.at("data-category") == expected[i]);
  // Each layer is one closed path over the six points: 6 "H" going right, 6 coming back.
  for (const Element* area : areas) {
    const std::string& d = area->attributes.at("d");
    CHECK(std::count(d.begin(), d.end(), 'H') == 12);
    CHECK(d.back() == 'Z');
  }
  // Exact allocator: reserved == live, no reserved line.
  CHECK(WithClass(elements, "reserved-line").empty());
}

TEST_CASE("the timeline SVG marks the peak at its step", "[report]") {
  testing::ReportFixture fixture;
  std::vector<Element> elements = ParseSvg(RenderTimelineSvg(fixture.report));
  const auto [left, right, top, bottom] = PlotAreaOf(elements);

  auto peaks = WithClass(elements, "peak");
  REQUIRE(peaks.size() == 1);
  CHECK(peaks[0]->attributes.at("data-index") == "4");
  CHECK(peaks[0]->attributes.at("data-bytes") == "280");
  const Element* circle = nullptr;
  for (const Element& e : elements)
    if (e.name == "circle") circle = &e;
  REQUIRE(circle != nullptr);
  // Point 4 of 6 covers [4, 5): its centre is at 4.5 / 6 of the plot width.
  CHECK(Attr(*circle, "cx") == Approx(left + (right - left) * 4.5 / 6).margin(0.06));
  // The budget (300) is within 1.5x the peak, so it sets the scale with 8% headroom: 324 bytes,
  // rounded up to the tick step (100 bytes: 324 / 5 ticks = 64.8 -> next 1-2-5 step is 100),
  // so y_max = 400 and 280 bytes sit at 70% of the plot height.
  CHECK(Attr(*circle, "cy") == Approx(bottom - (bottom - top) * 280.0 / 400.0).margin(0.06));
  auto budget = WithClass(elements, "budget-line");
  REQUIRE(budget.size() == 1);
  CHECK(Attr(*budget[0], "y1") == Approx(bottom - (bottom - top) * 300.0 / 400.0).margin(0.06));
}

TEST_CASE("the timeline SVG shades one band per phase run", "[report]") {
  testing::ReportFixture fixture;
  std::vector<Element> elements = ParseSvg(RenderTimelineSvg(fixture.report));
  const auto [left, right, top, bottom] = PlotAreaOf(elements);
  auto bands = WithClass(elements, "band");
  // setup [0,1), forward [1,4) (load, forward, loss), backward [4,5), optimizer [5,6).
  REQUIRE(bands.size() == 4);
  const char* classes[] = {"band band-setup", "band band-forward", "band band-backward",
                           "band band-optimizer"};
  const double begins[] = {0, 1, 4, 5};
  const double ends[] = {1, 4, 5, 6};
  for (size_t i = 0; i < 4; ++i) {
    CHECK(bands[i]->attributes.at("class") == classes[i]);
    CHECK(Attr(*bands[i], "x") == Approx(left + (right - left) * begins[i] / 6).margin(0.06));
    CHECK(Attr(*bands[i], "width") ==
          Approx((right - left) * (ends[i] - begins[i]) / 6).margin(0.11));
  }
}

TEST_CASE("a budget far above the peak is a label, not a line", "[report]") {
  testing::ReportFixture fixture(/*budget_bytes=*/100000);
  const std::string svg = RenderTimelineSvg(fixture.report);
  std::vector<Element> elements = ParseSvg(svg);
  CHECK(WithClass(elements, "budget-line").empty());
  CHECK(WithClass(elements, "off-scale").size() == 1);
  // 280 / 100000 = 0.28%, printed as "0%".
  CHECK(svg.find("budget 97.7 KiB (above the chart, the plan&#39;s peak uses 0%)") !=
        std::string::npos);
}

TEST_CASE("the caching model's reserved bytes are drawn as a line", "[report]") {
  testing::ReportFixture fixture;
  for (TimelinePoint& p : fixture.plan.simulation.timeline) p.reserved_bytes = 512;
  std::vector<Element> elements = ParseSvg(RenderTimelineSvg(fixture.report));
  REQUIRE(WithClass(elements, "reserved-line").size() == 1);
}

TEST_CASE("the peak label names live and reserved bytes and stays off the reserved line",
          "[report]") {
  testing::ReportFixture fixture;
  // Reserved 290 bytes everywhere: 10 bytes above the live peak (280), so a label put just above
  // the peak point (the old rule, 8 units up) would sit on the dashed line.
  for (TimelinePoint& p : fixture.plan.simulation.timeline) p.reserved_bytes = 290;
  const std::string svg = RenderTimelineSvg(fixture.report);
  std::vector<Element> elements = ParseSvg(svg);
  const auto [left, right, top, bottom] = PlotAreaOf(elements);
  const Element* label = WithClass(elements, "peak-label").at(0);
  // y_max is 400 as in the test above: the line at 290 bytes is at 72.5% of the plot height.
  const double line_y = bottom - (bottom - top) * 290.0 / 400.0;
  const double baseline = Attr(*label, "y");
  // The glyphs span [baseline - 11, baseline] (11-px font): the line must be outside, with the
  // label's white outline (3 units) to spare.
  CHECK((baseline + 3 <= line_y || baseline - 11 - 3 >= line_y));
  CHECK(svg.find("live peak 280 B (reserved 290 B) at ") != std::string::npos);
}

TEST_CASE("the timeline's x axis has step ticks and says its unit", "[report]") {
  testing::ReportFixture fixture;
  const std::string svg = RenderTimelineSvg(fixture.report);
  std::vector<Element> elements = ParseSvg(svg);
  // Six points: 6 / 5 target ticks = 1.2, rounded up to the 1-2-5 step 2: ticks 0, 2, 4, 6.
  CHECK(WithClass(elements, "x-tick-label").size() == 4);
  CHECK(svg.find(">executed step (index, 6 steps): ") != std::string::npos);
  CHECK(svg.find(">bytes live (areas)</text>") != std::string::npos);
}

TEST_CASE("a long timeline is drawn downsampled with its peak", "[report]") {
  testing::ReportFixture fixture;
  // 10000 points: the fixture's six repeated; the peak (280 bytes) moved to point 6663 by making
  // every other copy of it smaller.
  std::vector<TimelinePoint> base = fixture.plan.simulation.timeline;
  std::vector<TimelinePoint>& timeline = fixture.plan.simulation.timeline;
  timeline.clear();
  for (size_t i = 0; i < 10000; ++i) {
    TimelinePoint p = base[i % 6];
    if (i % 6 == 4 && i != 6664) {
      p.by_category[MemoryCategory::kTransients] = 20;  // 270 live
      p.live_bytes = p.by_category.Total();
    }
    p.at.iteration = static_cast<int>(i / 6);  // distinct points; peak_at names point 6664
    timeline.push_back(p);
  }
  fixture.plan.simulation.peak_at = timeline[6664].at;
  TimelineSvgOptions options;
  options.chart.max_points = 100;
  std::vector<Element> elements = ParseSvg(RenderTimelineSvg(fixture.report, options));
  // Each bucket of 100 points keeps one of its backward points (270 or 280 live bytes, the most),
  // so the layers are those of a backward point: parameters, gradients, activations, transients.
  // The inputs ("other") and the optimizer state live only at points no bucket keeps.
  auto areas = WithClass(elements, "area");
  REQUIRE(areas.size() == 4);
  for (const Element* area : areas) {
    const std::string& d = area->attributes.at("d");
    CHECK(std::count(d.begin(), d.end(), 'H') == 200);  // 100 buckets, there and back
  }
  auto peaks = WithClass(elements, "peak");
  REQUIRE(!peaks.empty());
  CHECK(peaks[0]->attributes.at("data-index") == "6664");
  CHECK(peaks[0]->attributes.at("data-bytes") == "280");

  TimelineChartOptions chart_options;
  chart_options.max_points = 100;
  TimelineChart chart = BuildTimelineChart(fixture.plan, chart_options);
  bool peak_kept = false;
  for (const TimelineBucket& b : chart.buckets) peak_kept = peak_kept || b.kept == 6664;
  CHECK(peak_kept);
}

TEST_CASE("the chart of a real plan marks the simulator's peak", "[report]") {
  Expected<Graph> graph = ImportOnnxModel(memplan::testing::ZooDir() + "/resnet18.onnx");
  REQUIRE(graph.ok());
  PlannerOptions options;
  Expected<GpuSpec> gpu = ResolveGpu("24G");
  REQUIRE(gpu.ok());
  options.gpu = *gpu;
  options.micro_batch = 8;
  Expected<TrainingPlan> plan = PlanTraining(*graph, options);
  REQUIRE(plan.ok());
  const std::vector<TimelinePoint>& timeline = plan->simulation.timeline;
  REQUIRE(!timeline.empty());
  REQUIRE(timeline.size() <= TimelineChartOptions{}.max_points);  // drawn point by point

  TimelineChart chart = BuildTimelineChart(*plan);
  int64_t max_live = 0;
  for (const TimelinePoint& p : timeline) max_live = std::max(max_live, p.live_bytes);
  CHECK(chart.peak_bytes == max_live);
  CHECK(timeline[chart.peak].live_bytes == plan->simulation.peak_bytes);
  // Setup once, then two optimizer steps of one micro-batch (k = 1): forward, backward,
  // optimizer each.
  REQUIRE(chart.bands.size() == 7);
  CHECK(chart.bands[0].phase == "setup");
  for (int iteration = 0; iteration < 2; ++iteration) {
    CHECK(chart.bands[1 + 3 * iteration].phase == "forward");
    CHECK(chart.bands[2 + 3 * iteration].phase == "backward");
    CHECK(chart.bands[3 + 3 * iteration].phase == "optimizer");
  }
  CHECK(chart.bands.back().end == timeline.size());

  AnalysisReport report;
  report.model_name = "resnet18";
  report.graph = &*graph;
  report.options = &options;
  report.plan = &*plan;
  std::vector<Element> elements = ParseSvg(RenderTimelineSvg(report));
  size_t non_empty = 0;
  for (MemoryCategory c : kAllMemoryCategories) {
    bool used = false;
    for (const TimelinePoint& p : timeline) used = used || p.by_category[c] > 0;
    non_empty += used ? 1 : 0;
  }
  CHECK(WithClass(elements, "area").size() == non_empty);
  auto peaks = WithClass(elements, "peak");
  REQUIRE(peaks.size() == 1);
  CHECK(peaks[0]->attributes.at("data-bytes") == std::to_string(plan->simulation.peak_bytes));
  // The caching model reserves more than is live somewhere.
  CHECK(WithClass(elements, "reserved-line").size() == 1);
}

TEST_CASE("an empty timeline renders a message", "[report]") {
  testing::ReportFixture fixture;
  fixture.plan.simulation.timeline.clear();
  std::vector<Element> elements = ParseSvg(RenderTimelineSvg(fixture.report));
  CHECK(WithClass(elements, "area").empty());
  CHECK(WithClass(elements, "empty").size() == 1);
}

TEST_CASE("WriteTimelineSvg names the path it cannot write", "[report]") {
  testing::ReportFixture fixture;
  Status status = WriteTimelineSvg(fixture.report, "/nonexistent-dir/timeline.svg");
  REQUIRE(!status.ok());
  CHECK(status.error().message.rfind("cannot write '/nonexistent-dir/timeline.svg': ", 0) == 0);
}

}  // namespace
}  // namespace memplan
