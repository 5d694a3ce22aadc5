#include "analyzer/report/snapshot_report.h"

#include <algorithm>
#include <map>
#include <sstream>

#include "analyzer/report/snapshot_frames.h"
#include "analyzer/report/timeline_chart.h"
#include "analyzer/text/markup.h"
#include "analyzer/text/memory_size.h"

namespace memplan {
namespace {

std::string Padded(std::string_view name, size_t width) {
  return std::string(name) + std::string(name.size() < width ? width - name.size() : 1, ' ');
}

// What the allocator's rules say about the OOM's cached-but-free bytes: before failing, PyTorch
// released every segment with no live block (release_cached_blocks), so what is still cached
// sits in segments that also hold live blocks. A request larger than any such free piece needs
// a new segment even when their sum would hold it: fragmentation, which
// expandable_segments:True removes by growing one segment per stream instead.
std::string OomAdvice(const SnapshotBreakdown& b, bool with_model) {
  std::ostringstream s;
  if (b.cached_free >= b.oom_request) {
    s << "  PyTorch held " << FormatBytes(b.cached_free)
      << " cached but free, more than the request, in segments that also hold live blocks\n"
      << "  (it releases the all-free ones before failing): fragmentation. "
         "PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True\n"
      << "  lets a stream grow one segment instead of needing a new one of the request's size.\n";
  } else if (with_model) {
    s << "  The request exceeds the " << FormatBytes(b.cached_free)
      << " PyTorch held cached but free: the live blocks themselves\n"
      << "  must shrink (the changes below).\n";
  } else {
    s << "  The request exceeds the " << FormatBytes(b.cached_free)
      << " PyTorch held cached but free: the live blocks themselves\n"
      << "  must shrink (a smaller micro-batch, recompute, lower precision; `memplan explain "
         "SNAPSHOT MODEL.onnx` plans them).\n";
  }
  return s.str();
}

// A live block's attribution: "grad(W1) (gradients), allocated by backward MatMul_0".
std::string AttributionText(const TrainingProgram& program, const AttributedBlock& block) {
  if (!block.matched_event) return "unattributed";
  return program.buffer(block.buffer).name + " (" +
         std::string(MemoryCategoryName(block.category)) + "), allocated by " + block.step;
}

// The live blocks, largest first (equal sizes in allocation order), at most `keep`.
std::vector<const AttributedBlock*> LargestAttributed(const SnapshotAttribution& a, size_t keep) {
  std::vector<const AttributedBlock*> blocks;
  for (const AttributedBlock& b : a.live) blocks.push_back(&b);
  std::stable_sort(
      blocks.begin(), blocks.end(),
      [](const AttributedBlock* x, const AttributedBlock* y) { return x->size > y->size; });
  if (blocks.size() > keep) blocks.resize(keep);
  return blocks;
}

constexpr size_t kLargestShown = 10;

void ModelText(const SnapshotExplanation& e, std::ostringstream& s) {
  const SnapshotModelExplanation& m = *e.model;
  const TrainingProgram& program = m.plan->program;
  const SnapshotAttribution& a = m.attribution;
  const HeldBytes held = HeldBytesOf(e.breakdown, a);
  s << "\nwith " << m.model_path << " at micro-batch " << m.plan->chosen.micro_batch << " x "
    << m.plan->chosen.accumulation_steps << " accumulation steps on "
    << FormatBytes(m.capacity_bytes) << " (" << m.capacity_source << "):\n";
  s << "  " << a.matched_allocations << " of " << a.snapshot_allocations
    << " allocations matched memplan's " << a.script_allocations
    << " (by size and order; docs/snapshots.md)\n";
  s << "\nwhat held it (memplan's categories):\n";
  for (MemoryCategory c : kAllMemoryCategories)
    if (held.attributed[c] > 0)
      s << "  " << Padded(MemoryCategoryName(c), 18) << FormatBytes(held.attributed[c]) << "\n";
  s << "  " << Padded("unattributed", 18) << FormatBytes(held.unattributed) << "\n";
  s << "  " << Padded("fragmentation", 18) << FormatBytes(held.fragmentation) << "\n";
  s << "  " << Padded("cached but free", 18) << FormatBytes(held.cached_free) << "\n";
  s << "\nlargest live blocks, attributed:\n";
  for (const AttributedBlock* b : LargestAttributed(a, kLargestShown))
    s << "  " << FormatBytes(b->size) << "  " << AttributionText(program, *b) << "\n";
  s << "\nmemplan's plan of the run: peak " << FormatBytes(m.plan->chosen.peak_bytes)
    << " reserved (" << FormatBytes(m.plan->chosen.exact_peak_bytes) << " live) at "
    << m.plan->simulation.peak_step_name << "; "
    << (m.plan->feasible ? "it fits" : "it does not fit") << " the budget of "
    << FormatBytes(m.plan->budget_bytes) << " (the device less memplan's cuBLAS workspaces)\n";
  if (m.plan->feasible && e.breakdown.at_oom)
    s << "  memplan's plan fits where PyTorch ran out: the difference is in the requests (the "
         "unattributed blocks,\n  sizes memplan does not plan) or in the allocator's layout "
         "(`memplan replay` separates the two)\n";
  s << "\nwhat would have fit " << FormatBytes(m.capacity_bytes) << ":\n";
  s << AlternativesText(m.alternatives);
}

nlohmann::ordered_json ModelJson(const SnapshotExplanation& e) {
  const SnapshotModelExplanation& m = *e.model;
  const TrainingProgram& program = m.plan->program;
  const SnapshotAttribution& a = m.attribution;
  const HeldBytes held = HeldBytesOf(e.breakdown, a);
  nlohmann::ordered_json j;
  j["path"] = m.model_path;
  j["capacity_bytes"] = m.capacity_bytes;
  j["capacity_source"] = m.capacity_source;
  j["plan"] = {{"micro_batch", m.plan->chosen.micro_batch},
               {"accumulation_steps", m.plan->chosen.accumulation_steps},
               {"peak_bytes", m.plan->chosen.peak_bytes},
               {"live_peak_bytes", m.plan->chosen.exact_peak_bytes},
               {"peak_step", m.plan->simulation.peak_step_name},
               {"budget_bytes", m.plan->budget_bytes},
               {"fits", m.plan->feasible}};
  j["snapshot_allocations"] = a.snapshot_allocations;
  j["matched_allocations"] = a.matched_allocations;
  j["script_allocations"] = a.script_allocations;
  nlohmann::ordered_json categories;
  for (MemoryCategory c : kAllMemoryCategories)
    categories[std::string(MemoryCategoryName(c))] = held.attributed[c];
  categories["unattributed"] = held.unattributed;
  categories["fragmentation"] = held.fragmentation;
  categories["cached_free"] = held.cached_free;
  j["held_by_category"] = categories;
  nlohmann::ordered_json blocks = nlohmann::ordered_json::array();
  for (const AttributedBlock* b : LargestAttributed(a, kLargestShown)) {
    nlohmann::ordered_json block = {{"bytes", b->size}, {"stream", b->stream}};
    if (b->matched_event) {
      block["buffer"] = program.buffer(b->buffer).name;
      block["category"] = std::string(MemoryCategoryName(b->category));
      block["step"] = b->step;
    } else {
      block["buffer"] = nullptr;
    }
    block["frames"] = FramesJson(*e.snapshot, b->frames);
    blocks.push_back(std::move(block));
  }
  j["largest_blocks"] = blocks;
  j["alternatives"] = AlternativesJson(m.alternatives);
  j["alternatives_not_planned"] = AlternativesNotPlannedJson(m.alternatives);
  return j;
}

}  // namespace

HeldBytes HeldBytesOf(const SnapshotBreakdown& breakdown, const SnapshotAttribution& attribution) {
  HeldBytes held;
  held.attributed = attribution.attributed;
  held.unattributed = attribution.unattributed_bytes;
  held.fragmentation = breakdown.rounded_bytes - breakdown.live_bytes;
  if (breakdown.at_oom)
    held.fragmentation += breakdown.cached_free;
  else
    held.cached_free = breakdown.cached_free;
  return held;
}

void FillSnapshotTimeline(SnapshotExplanation& explanation, int64_t start_reserved,
                          int64_t start_live) {
  const MemorySnapshot& snapshot = *explanation.snapshot;
  int64_t reserved = start_reserved;
  int64_t live = start_live;
  std::map<int64_t, int64_t> sizes;  // live blocks' requested bytes by address
  explanation.reserved_after.clear();
  explanation.live_after.clear();
  for (const SnapshotEvent& ev : snapshot.events) {
    switch (ev.action) {
      case SnapshotAction::kSegmentAlloc:
      case SnapshotAction::kSegmentMap:
        reserved += ev.size;
        break;
      case SnapshotAction::kSegmentFree:
      case SnapshotAction::kSegmentUnmap:
        reserved -= ev.size;
        break;
      case SnapshotAction::kAlloc:
        live += ev.size;
        sizes[ev.address] = ev.size;
        break;
      case SnapshotAction::kFreeCompleted:
        // A block allocated before the trace is in start_live with the size its free names.
        live -= sizes.count(ev.address) ? sizes[ev.address] : ev.size;
        sizes.erase(ev.address);
        break;
      default:
        break;
    }
    explanation.reserved_after.push_back(reserved);
    explanation.live_after.push_back(live);
  }
}

std::string SnapshotExplanationText(const SnapshotExplanation& e) {
  const MemorySnapshot& snapshot = *e.snapshot;
  const SnapshotBreakdown& b = e.breakdown;
  std::ostringstream s;
  s << "memplan explain " << e.path << ": device " << snapshot.device << "\n";
  if (b.at_oom) {
    s << "out of memory at event #" << b.event << ": a request of " << FormatBytes(b.oom_request)
      << " with " << FormatBytes(b.reserved) << " reserved\n";
  } else {
    s << "no OOM in the trace; at PyTorch's reserved peak (event #" << b.event
      << "): " << FormatBytes(b.reserved) << " reserved\n";
  }
  s << "\nwhat held it (by the frames of each allocation):\n";
  for (int c = 0; c < kSnapshotCategories; ++c) {
    if (b.by_category[c] == 0) continue;
    s << "  " << Padded(SnapshotCategoryName(static_cast<SnapshotCategory>(c)), 18)
      << FormatBytes(b.by_category[c]) << "\n";
  }
  s << "  cached but free   " << FormatBytes(b.cached_free) << "\n";
  s << "  reserved          " << FormatBytes(b.reserved) << "\n";
  if (!b.largest.empty()) {
    s << "\nlargest live blocks:\n";
    for (const SnapshotLiveBlock& block : b.largest)
      s << "  " << FormatBytes(block.size) << "  " << SnapshotCategoryName(block.category) << "  "
        << FrameText(snapshot, block.frames) << "\n";
  }
  if (b.at_oom) s << "\n" << OomAdvice(b, e.model.has_value());
  if (e.model) ModelText(e, s);
  return s.str();
}

std::string SnapshotExplanationJson(const SnapshotExplanation& e) {
  const MemorySnapshot& snapshot = *e.snapshot;
  const SnapshotBreakdown& b = e.breakdown;
  nlohmann::ordered_json j;
  j["schema"] = "memplan/1";
  j["command"] = "explain";
  j["snapshot"] = e.path;
  j["device"] = snapshot.device;
  j["event"] = b.event;
  j["at_oom"] = b.at_oom;
  if (b.at_oom) j["oom_request_bytes"] = b.oom_request;
  j["reserved_bytes"] = b.reserved;
  j["live_bytes"] = b.live_bytes;
  j["cached_free_bytes"] = b.cached_free;
  nlohmann::ordered_json categories;
  for (int c = 0; c < kSnapshotCategories; ++c)
    categories[std::string(SnapshotCategoryName(static_cast<SnapshotCategory>(c)))] =
        b.by_category[c];
  j["by_category"] = categories;
  nlohmann::ordered_json largest = nlohmann::ordered_json::array();
  for (const SnapshotLiveBlock& block : b.largest)
    largest.push_back({{"bytes", block.size},
                       {"category", std::string(SnapshotCategoryName(block.category))},
                       {"stream", block.stream},
                       {"frames", FramesJson(snapshot, block.frames)}});
  j["largest_blocks"] = largest;
  if (e.model) j["model"] = ModelJson(e);
  return j.dump(2) + "\n";
}

std::string SnapshotExplanationHtml(const SnapshotExplanation& e) {
  // The chart: x = event index, y = bytes; PyTorch's reserved bytes and the live requested
  // bytes as two step lines, the focus as a vertical rule, the capacity (with the model) as a
  // horizontal one.
  constexpr double kWidth = 900, kHeight = 320, kLeft = 70, kTop = 20, kBottom = 40;
  const size_t n = e.reserved_after.size();
  int64_t top = 1;
  for (size_t i = 0; i < n; ++i) top = std::max({top, e.reserved_after[i], e.live_after[i]});
  if (e.model) top = std::max(top, e.model->capacity_bytes);
  const double plot_w = kWidth - kLeft - 20, plot_h = kHeight - kTop - kBottom;
  auto x_of = [&](double i) { return kLeft + plot_w * (n > 1 ? i / double(n - 1) : 0.5); };
  auto y_of = [&](int64_t bytes) { return kTop + plot_h * (1.0 - double(bytes) / double(top)); };
  auto polyline = [&](const std::vector<int64_t>& values) {
    std::string points;
    for (size_t i = 0; i < values.size(); ++i) {
      if (i > 0)
        points +=
            FormatCoordinate(x_of(double(i))) + "," + FormatCoordinate(y_of(values[i - 1])) + " ";
      points += FormatCoordinate(x_of(double(i))) + "," + FormatCoordinate(y_of(values[i])) + " ";
    }
    return points;
  };
  std::ostringstream h;
  h << "<!DOCTYPE html>\n<html><head><meta charset=\"utf-8\"><title>memplan explain "
    << EscapeMarkup(e.path) << "</title>\n<style>body{font-family:sans-serif;margin:2em}"
    << "pre{background:#f6f6f6;padding:1em}</style></head><body>\n";
  h << "<h1>memplan explain " << EscapeMarkup(e.path) << "</h1>\n";
  h << "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"" << kWidth << "\" height=\"" << kHeight
    << "\" role=\"img\" aria-label=\"reserved and live bytes over the trace\">\n";
  h << "<line x1=\"" << kLeft << "\" y1=\"" << FormatCoordinate(kTop + plot_h) << "\" x2=\""
    << FormatCoordinate(kLeft + plot_w) << "\" y2=\"" << FormatCoordinate(kTop + plot_h)
    << "\" stroke=\"#888\"/>\n";
  h << "<text x=\"4\" y=\"" << FormatCoordinate(kTop + 10) << "\" font-size=\"11\">"
    << EscapeMarkup(FormatBytes(top)) << "</text>\n";
  h << "<text x=\"" << FormatCoordinate(kLeft) << "\" y=\"" << FormatCoordinate(kHeight - 10)
    << "\" font-size=\"11\">events 0.." << (n > 0 ? n - 1 : 0) << "</text>\n";
  if (n > 0) {
    h << "<polyline fill=\"none\" stroke=\"#d62728\" stroke-width=\"1.5\" points=\""
      << polyline(e.reserved_after) << "\"><title>reserved (PyTorch)</title></polyline>\n";
    h << "<polyline fill=\"none\" stroke=\"" << MemoryCategoryColor(MemoryCategory::kActivations)
      << "\" stroke-width=\"1.5\" points=\"" << polyline(e.live_after)
      << "\"><title>live requested bytes</title></polyline>\n";
  }
  if (e.breakdown.event >= 0) {
    const std::string x = FormatCoordinate(x_of(double(e.breakdown.event)));
    h << "<line x1=\"" << x << "\" y1=\"" << FormatCoordinate(kTop) << "\" x2=\"" << x << "\" y2=\""
      << FormatCoordinate(kTop + plot_h) << "\" stroke=\"#000\" stroke-dasharray=\"4 3\"><title>"
      << (e.breakdown.at_oom ? "the OOM" : "the reserved peak") << " (event #" << e.breakdown.event
      << ")</title></line>\n";
  }
  if (e.model) {
    const std::string y = FormatCoordinate(y_of(e.model->capacity_bytes));
    h << "<line x1=\"" << kLeft << "\" y1=\"" << y << "\" x2=\"" << FormatCoordinate(kLeft + plot_w)
      << "\" y2=\"" << y << "\" stroke=\"#2ca02c\" stroke-dasharray=\"2 2\"><title>capacity "
      << EscapeMarkup(FormatBytes(e.model->capacity_bytes)) << "</title></line>\n";
  }
  h << "</svg>\n<p>red: PyTorch's reserved bytes; the other line: live requested bytes; dashed: "
    << (e.breakdown.at_oom ? "the OOM" : "the reserved peak")
    << (e.model ? "; green: the device's capacity" : "") << "</p>\n";
  h << "<pre>" << EscapeMarkup(SnapshotExplanationText(e)) << "</pre>\n</body></html>\n";
  return h.str();
}

}  // namespace memplan
