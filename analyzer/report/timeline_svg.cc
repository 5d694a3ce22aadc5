#include "analyzer/report/timeline_svg.h"

#include <algorithm>
#include <cstdio>
#include <sstream>

#include "analyzer/text/markup.h"
#include "analyzer/text/memory_size.h"

namespace memplan {
namespace {

// Layout in SVG user units. The band-label strip sits between the title and the plot; the x-axis
// label and the legend below it.
constexpr double kMarginLeft = 78;
constexpr double kMarginRight = 24;
constexpr double kPlotTop = 56;
constexpr double kSpaceBelowPlot = 80;
constexpr double kMinLabelledBandWidth = 22;  // narrower bands keep only their <title> tooltip
constexpr double kLegendCharWidth = 6.2;      // average glyph width of 11-px sans-serif
constexpr int kTargetTicks = 5;

std::string_view BandFill(const std::string& phase) {
  if (phase == "forward") return "#e8f0fa";
  if (phase == "backward") return "#fbeee0";
  if (phase == "optimizer") return "#efe6f5";
  return "#ececec";
}

// A tick step of 1, 2 or 5 times a power of ten in the largest binary unit (B, KiB, MiB...)
// below it, so labels read "2.0 GiB", "500.0 MiB".
int64_t NiceByteStep(int64_t top) {
  const double target = std::max(1.0, static_cast<double>(top) / kTargetTicks);
  int64_t unit = 1;
  while (static_cast<double>(unit) * 1024 <= target) unit *= 1024;
  const double mantissa = target / static_cast<double>(unit);
  for (double nice : {1.0, 2.0, 5.0, 10.0, 20.0, 50.0, 100.0, 200.0, 500.0}) {
    if (nice >= mantissa) return static_cast<int64_t>(nice) * unit;
  }
  return unit * 1024;
}

// A tick step of 1, 2 or 5 times a power of ten for an axis of `count` steps.
int64_t NiceCountStep(int64_t count) {
  const double target = std::max(1.0, static_cast<double>(count) / kTargetTicks);
  for (int64_t power = 1;; power *= 10) {
    for (int64_t nice : {1, 2, 5}) {
      if (static_cast<double>(nice * power) >= target) return nice * power;
    }
  }
}

struct Frame {
  double left = 0, right = 0, top = 0, bottom = 0;
  size_t points = 1;
  int64_t y_max = 1;
  double X(double index) const {
    return left + (right - left) * index / static_cast<double>(points);
  }
  double Y(int64_t bytes) const {
    return bottom - (bottom - top) * static_cast<double>(bytes) / static_cast<double>(y_max);
  }
};

std::string Attr(std::string_view name, double value) {
  return " " + std::string(name) + "=\"" + FormatCoordinate(value) + "\"";
}

class SvgBuilder {
 public:
  SvgBuilder(const AnalysisReport& report, const TimelineSvgOptions& options)
      : report_(report),
        plan_(*report.plan),
        options_(options),
        chart_(BuildTimelineChart(plan_, options.chart)) {}

  std::string Build() {
    SetUpFrame();
    Open();
    Title();
    if (chart_.num_points == 0) {
      out_ << "<text class=\"empty\" x=\"" << FormatCoordinate(options_.width / 2) << "\" y=\""
           << FormatCoordinate(options_.height / 2)
           << "\" text-anchor=\"middle\">no memory timeline was recorded</text>\n";
    } else {
      Bands();
      Axes();
      Areas();
      ReservedLine();
      Budget();
      Peak();
      Legend();
    }
    out_ << "</svg>\n";
    return out_.str();
  }

 private:
  const std::vector<TimelinePoint>& timeline() const { return plan_.simulation.timeline; }

  void SetUpFrame() {
    frame_.left = kMarginLeft;
    frame_.right = options_.width - kMarginRight;
    frame_.top = kPlotTop;
    frame_.bottom = options_.height - kSpaceBelowPlot;
    frame_.points = std::max<size_t>(chart_.num_points, 1);
    const int64_t budget = plan_.budget_bytes;
    budget_in_scale_ =
        budget > 0 && static_cast<double>(budget) <=
                          static_cast<double>(chart_.max_bytes) * options_.budget_in_scale_factor;
    int64_t top = std::max<int64_t>(chart_.max_bytes, budget_in_scale_ ? budget : 0);
    top = static_cast<int64_t>(static_cast<double>(top) * (1 + options_.headroom_fraction));
    tick_step_ = NiceByteStep(top);
    frame_.y_max = std::max<int64_t>(1, (top + tick_step_ - 1) / tick_step_ * tick_step_);
  }

  void Open() {
    if (options_.standalone) out_ << "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n";
    out_ << "<svg";
    if (options_.standalone) out_ << " xmlns=\"http://www.w3.org/2000/svg\"";
    out_ << " class=\"memplan-timeline\" id=\"timeline-svg\"" << Attr("width", options_.width)
         << Attr("height", options_.height) << " viewBox=\"0 0 " << FormatCoordinate(options_.width)
         << " " << FormatCoordinate(options_.height) << "\"" << Attr("data-plot-left", frame_.left)
         << Attr("data-plot-right", frame_.right) << Attr("data-plot-top", frame_.top)
         << Attr("data-plot-bottom", frame_.bottom) << " data-points=\"" << chart_.num_points
         << "\""
         << " font-family=\"sans-serif\" font-size=\"11\">\n";
    out_ << "<rect class=\"background\" x=\"0\" y=\"0\"" << Attr("width", options_.width)
         << Attr("height", options_.height) << " fill=\"#ffffff\"/>\n";
  }

  void Title() {
    const PlanCandidate& c = plan_.chosen;
    std::ostringstream title;
    title << report_.model_name << " on " << report_.options->gpu.name << ": micro-batch "
          << c.micro_batch << " x " << c.accumulation_steps << ", "
          << PrecisionName(plan_.program.precision) << ", "
          << OptimizerKindName(plan_.program.optimizer_kind) << " - live memory by category";
    out_ << "<title>memplan memory timeline: " << EscapeMarkup(title.str()) << "</title>\n";
    out_ << "<text class=\"chart-title\"" << Attr("x", frame_.left) << " y=\"18\""
         << " font-size=\"14\" font-weight=\"bold\">" << EscapeMarkup(title.str()) << "</text>\n";
  }

  void Bands() {
    out_ << "<g class=\"bands\">\n";
    for (const TimelinePhaseBand& band : chart_.bands) {
      const double x0 = frame_.X(static_cast<double>(band.begin));
      const double x1 = frame_.X(static_cast<double>(band.end));
      out_ << "<rect class=\"band band-" << band.phase << "\"" << Attr("x", x0)
           << Attr("y", frame_.top) << Attr("width", x1 - x0)
           << Attr("height", frame_.bottom - frame_.top) << " fill=\"" << BandFill(band.phase)
           << "\"><title>" << EscapeMarkup(BandTitle(band)) << " (steps " << band.begin << "-"
           << band.end - 1 << ")</title></rect>\n";
      if (x1 - x0 >= kMinLabelledBandWidth) {
        out_ << "<text class=\"band-label\"" << Attr("x", (x0 + x1) / 2)
             << Attr("y", frame_.top - 6) << " text-anchor=\"middle\" fill=\"#555555\">"
             << BandShortLabel(band) << "</text>\n";
      }
    }
    out_ << "</g>\n";
  }

  void Axes() {
    out_ << "<g class=\"axes\">\n";
    for (int64_t tick = 0; tick <= frame_.y_max; tick += tick_step_) {
      const double y = frame_.Y(tick);
      out_ << "<line class=\"grid\"" << Attr("x1", frame_.left) << Attr("x2", frame_.right)
           << Attr("y1", y) << Attr("y2", y) << " stroke=\"#000000\" stroke-opacity=\"0.12\"/>\n";
      out_ << "<text class=\"tick-label\"" << Attr("x", frame_.left - 6) << Attr("y", y + 4)
           << " text-anchor=\"end\">" << EscapeMarkup(FormatBytes(tick)) << "</text>\n";
    }
    out_ << "<line class=\"axis\"" << Attr("x1", frame_.left) << Attr("x2", frame_.right)
         << Attr("y1", frame_.bottom) << Attr("y2", frame_.bottom) << " stroke=\"#333333\"/>\n";
    // x ticks: the executed-step index, so "step 1200" in a tooltip or the peak label can be
    // found on the axis.
    const int64_t points = static_cast<int64_t>(chart_.num_points);
    const int64_t x_step = NiceCountStep(points);
    for (int64_t tick = 0; tick <= points; tick += x_step) {
      const double x = frame_.X(static_cast<double>(tick));
      out_ << "<line class=\"x-tick\"" << Attr("x1", x) << Attr("x2", x)
           << Attr("y1", frame_.bottom) << Attr("y2", frame_.bottom + 4) << " stroke=\"#333333\"/>"
           << "<text class=\"x-tick-label\"" << Attr("x", x) << Attr("y", frame_.bottom + 14)
           << " text-anchor=\"middle\" fill=\"#555555\">" << tick << "</text>\n";
    }
    std::ostringstream label;
    label << "executed step (index, " << chart_.num_points << " steps): setup, then per "
          << "optimizer step the micro-batches (forward, backward) and the optimizer";
    if (plan_.chosen.accumulation_steps > 2) {
      label << " (micro-batches 3-" << plan_.chosen.accumulation_steps
            << " repeat micro-batch 2 and are not drawn)";
    }
    out_ << "<text class=\"axis-label\"" << Attr("x", (frame_.left + frame_.right) / 2)
         << Attr("y", frame_.bottom + 30) << " text-anchor=\"middle\" fill=\"#333333\">"
         << EscapeMarkup(label.str()) << "</text>\n";
    out_ << "<text class=\"axis-label y-axis-label\"" << Attr("x", 10)
         << Attr("y", (frame_.top + frame_.bottom) / 2) << " transform=\"rotate(-90 10 "
         << FormatCoordinate((frame_.top + frame_.bottom) / 2)
         << ")\" text-anchor=\"middle\" fill=\"#333333\">bytes live (areas)"
         << (chart_.show_reserved ? ", reserved (dashed line)" : "") << "</text>\n";
    out_ << "</g>\n";
  }

  // One closed step-shaped path per category between its lower and upper stack edges.
  void Areas() {
    const std::vector<TimelineBucket>& buckets = chart_.buckets;
    std::vector<int64_t> lower(buckets.size(), 0);
    out_ << "<g class=\"areas\">\n";
    for (MemoryCategory category : chart_.categories) {
      std::vector<int64_t> upper(buckets.size());
      for (size_t j = 0; j < buckets.size(); ++j)
        upper[j] = lower[j] + timeline()[buckets[j].kept].by_category[category];
      std::ostringstream d;
      d << "M" << FormatCoordinate(frame_.X(static_cast<double>(buckets[0].begin))) << " "
        << FormatCoordinate(frame_.Y(upper[0]));
      for (size_t j = 0; j < buckets.size(); ++j) {
        if (j > 0) d << "V" << FormatCoordinate(frame_.Y(upper[j]));
        d << "H" << FormatCoordinate(frame_.X(static_cast<double>(buckets[j].end)));
      }
      for (size_t j = buckets.size(); j-- > 0;) {
        d << "V" << FormatCoordinate(frame_.Y(lower[j]));
        d << "H" << FormatCoordinate(frame_.X(static_cast<double>(buckets[j].begin)));
      }
      d << "Z";
      out_ << "<path class=\"area\" data-category=\"" << MemoryCategoryName(category)
           << "\" fill=\"" << MemoryCategoryColor(category) << "\" d=\"" << d.str() << "\"><title>"
           << MemoryCategoryName(category) << "</title></path>\n";
      lower = std::move(upper);
    }
    out_ << "</g>\n";
  }

  void ReservedLine() {
    if (!chart_.show_reserved) return;
    const std::vector<TimelineBucket>& buckets = chart_.buckets;
    std::ostringstream d;
    for (size_t j = 0; j < buckets.size(); ++j) {
      const double y = frame_.Y(timeline()[buckets[j].kept].reserved_bytes);
      if (j == 0) {
        d << "M" << FormatCoordinate(frame_.X(static_cast<double>(buckets[0].begin))) << " "
          << FormatCoordinate(y);
      } else {
        d << "V" << FormatCoordinate(y);
      }
      d << "H" << FormatCoordinate(frame_.X(static_cast<double>(buckets[j].end)));
    }
    out_ << "<path class=\"reserved-line\" fill=\"none\" stroke=\"#333333\" stroke-width=\"1.2\""
         << " stroke-dasharray=\"4 3\" d=\"" << d.str()
         << "\"><title>reserved by the caching allocator model</title></path>\n";
  }

  void Budget() {
    const std::string text = "budget " + FormatBytes(plan_.budget_bytes);
    if (budget_in_scale_) {
      const double y = frame_.Y(plan_.budget_bytes);
      out_ << "<g class=\"budget\"><line class=\"budget-line\"" << Attr("x1", frame_.left)
           << Attr("x2", frame_.right) << Attr("y1", y) << Attr("y2", y)
           << " stroke=\"#d62728\" stroke-width=\"1.5\" stroke-dasharray=\"6 4\"/>"
           << "<text class=\"budget-label\"" << Attr("x", frame_.right - 4) << Attr("y", y - 5)
           << " text-anchor=\"end\" fill=\"#d62728\">" << EscapeMarkup(text) << "</text></g>\n";
      return;
    }
    const int64_t peak = plan_.chosen.peak_bytes;
    std::string share;
    if (plan_.budget_bytes > 0) {
      char buffer[32];
      std::snprintf(buffer, sizeof(buffer), "%.0f%%",
                    100.0 * static_cast<double>(peak) / static_cast<double>(plan_.budget_bytes));
      share = std::string(", the plan's peak uses ") + buffer;
    }
    out_ << "<text class=\"budget-label off-scale\"" << Attr("x", frame_.right)
         << Attr("y", frame_.top - 22) << " text-anchor=\"end\" fill=\"#d62728\">"
         << EscapeMarkup(text + " (above the chart" + share + ")") << "</text>\n";
  }

  // The reserved bytes drawn at timeline index `index` (its bucket's kept point); 0 without the
  // reserved line.
  int64_t ReservedAt(size_t index) const {
    if (!chart_.show_reserved) return 0;
    for (const TimelineBucket& b : chart_.buckets)
      if (b.begin <= index && index < b.end) return timeline()[b.kept].reserved_bytes;
    return 0;
  }

  // The peak of the live bytes (the areas). The text report's headline peak is the allocator
  // model's (reserved with the caching model), so the label names both. It sits above the
  // reserved line where there is room and below the point otherwise, never on the line.
  void Peak() {
    if (!chart_.has_peak) return;
    const double x = frame_.X(static_cast<double>(chart_.peak) + 0.5);
    const double y = frame_.Y(chart_.peak_bytes);
    const bool right_half = x > (frame_.left + frame_.right) / 2;
    constexpr double kGap = 6;          // between the label's baseline and a line under it
    constexpr double kTextHeight = 11;  // the font size
    const int64_t reserved = ReservedAt(chart_.peak);
    const double line_y = reserved > 0 ? std::min(y, frame_.Y(reserved)) : y;
    const double above = line_y - kGap;
    const double label_y = above - kTextHeight >= frame_.top ? above : y + kGap + kTextHeight;
    std::string text = "live peak " + FormatBytes(chart_.peak_bytes);
    if (reserved > 0) text += " (reserved " + FormatBytes(reserved) + ")";
    text += " at " + chart_.peak_step;
    out_ << "<g class=\"peak\" data-index=\"" << chart_.peak << "\" data-bytes=\""
         << chart_.peak_bytes << "\">"
         << "<line" << Attr("x1", x) << Attr("x2", x) << Attr("y1", y) << Attr("y2", frame_.bottom)
         << " stroke=\"#222222\" stroke-dasharray=\"2 2\"/>"
         << "<circle" << Attr("cx", x) << Attr("cy", y)
         << " r=\"4\" fill=\"#222222\" stroke=\"#ffffff\" stroke-width=\"1.5\"/>"
         << "<text class=\"peak-label\"" << Attr("x", right_half ? x - 8 : x + 8)
         << Attr("y", label_y) << " text-anchor=\"" << (right_half ? "end" : "start")
         << "\" font-weight=\"bold\" fill=\"#222222\""
         // A white outline under the glyphs keeps the label legible over lines and layers.
         << " stroke=\"#ffffff\" stroke-width=\"3\" paint-order=\"stroke\">" << EscapeMarkup(text)
         << "</text></g>\n";
  }

  void Legend() {
    struct Entry {
      std::string label;
      std::string_view color;
      std::string_view dash;  // empty: a filled square (a layer); otherwise a dashed line
    };
    std::vector<Entry> entries;
    const TimelinePoint& at_peak = timeline()[chart_.peak];
    for (MemoryCategory c : chart_.categories) {
      entries.push_back(
          {std::string(MemoryCategoryName(c)) + " " + FormatBytes(at_peak.by_category[c]),
           MemoryCategoryColor(c), ""});
    }
    if (chart_.show_reserved) {
      int64_t reserved = 0;
      for (const TimelineBucket& b : chart_.buckets)
        reserved = std::max(reserved, timeline()[b.kept].reserved_bytes);
      entries.push_back({"reserved by the caching allocator, at most " + FormatBytes(reserved),
                         "#333333", "4 3"});
    }
    if (budget_in_scale_) entries.push_back({"budget", "#d62728", "6 4"});

    out_ << "<g class=\"legend\">\n";
    double y = frame_.bottom + 48;
    out_ << "<text" << Attr("x", frame_.left - 6) << Attr("y", y)
         << " text-anchor=\"end\" fill=\"#555555\">at the peak:</text>\n";
    double x = frame_.left;
    for (const Entry& e : entries) {
      const double width = 18 + kLegendCharWidth * static_cast<double>(e.label.size()) + 16;
      if (x + width > options_.width - kMarginRight && x > frame_.left) {
        x = frame_.left;
        y += 18;
      }
      if (e.dash.empty()) {
        out_ << "<rect" << Attr("x", x) << Attr("y", y - 10)
             << " width=\"12\" height=\"12\" fill=\"" << e.color << "\"/>";
      } else {
        out_ << "<line" << Attr("x1", x) << Attr("x2", x + 12) << Attr("y1", y - 4)
             << Attr("y2", y - 4) << " stroke=\"" << e.color
             << "\" stroke-width=\"1.5\" stroke-dasharray=\"" << e.dash << "\"/>";
      }
      out_ << "<text" << Attr("x", x + 18) << Attr("y", y) << ">" << EscapeMarkup(e.label)
           << "</text>\n";
      x += width;
    }
    out_ << "</g>\n";
  }

  const AnalysisReport& report_;
  const TrainingPlan& plan_;
  const TimelineSvgOptions& options_;
  TimelineChart chart_;
  Frame frame_;
  int64_t tick_step_ = 1;
  bool budget_in_scale_ = false;
  std::ostringstream out_;
};

}  // namespace

std::string RenderTimelineSvg(const AnalysisReport& report, const TimelineSvgOptions& options) {
  MEMPLAN_CHECK(report.plan != nullptr && report.options != nullptr);
  return SvgBuilder(report, options).Build();
}

Status WriteTimelineSvg(const AnalysisReport& report, const std::string& path) {
  return WriteTextFile(path, RenderTimelineSvg(report));
}

}  // namespace memplan
