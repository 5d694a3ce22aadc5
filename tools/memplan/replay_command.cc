// `memplan replay SNAPSHOT [--json]`: a PyTorch memory snapshot's recorded allocations and frees
// through memplan's caching-allocator model, beside the segments PyTorch itself made
// (analyzer/simulation/snapshot_replay.h). SNAPSHOT is tools/snapshot_to_json.py's output.
#include <memory>
#include <sstream>
#include <string>

#include <nlohmann/json.hpp>

#include "analyzer/report/snapshot_frames.h"
#include "analyzer/simulation/allocator_config.h"
#include "analyzer/simulation/memory_snapshot.h"
#include "analyzer/simulation/snapshot_replay.h"
#include "analyzer/text/memory_size.h"
#include "tools/memplan/cli_common.h"
#include "tools/memplan/commands.h"

namespace memplan::cli {
namespace {

struct ReplayFlags {
  std::string snapshot;
  std::string alloc_conf;  // --alloc-conf: PYTORCH_CUDA_ALLOC_CONF for the model
  bool json = false;
};

std::string RenderJson(const std::string& path, const std::string& alloc_conf,
                       const MemorySnapshot& snapshot, const SnapshotReplayResult& r) {
  nlohmann::ordered_json j;
  j["schema"] = "memplan/1";
  j["command"] = "replay";
  j["device"] = snapshot.device;
  j["allocations"] = r.allocations;
  j["frees"] = r.frees;
  j["streams"] = r.streams;
  j["preexisting_blocks"] = r.preexisting_blocks;
  j["preexisting_bytes"] = r.preexisting_bytes;
  j["peak_requested_bytes"] = r.peak_requested;
  j["snapshot"] = {{"path", path},
                   {"start_reserved_bytes", r.snapshot_start_reserved},
                   {"peak_reserved_bytes", r.snapshot_peak_reserved},
                   {"end_reserved_bytes", r.snapshot_end_reserved},
                   {"segments_made", r.snapshot_segments_made},
                   {"end_segment_bytes", r.snapshot_end_segments}};
  j["model"] = {{"allocator", "caching"},
                {"alloc_conf", alloc_conf},
                {"start_reserved_bytes", r.model_start_reserved},
                {"peak_reserved_bytes", r.model_peak_reserved},
                {"end_reserved_bytes", r.model_end_reserved},
                {"peak_allocated_bytes", r.model_peak_allocated},
                {"segments_made", r.model_segments_made},
                {"end_segment_bytes", r.model_end_segments}};
  j["divergent_events"] = r.divergent_events;
  if (r.first_divergence) {
    const ReplayDivergence& d = *r.first_divergence;
    j["first_divergence"] = {{"event", d.event},
                             {"action", std::string(SnapshotActionName(d.action))},
                             {"size", d.size},
                             {"stream", d.stream},
                             {"snapshot_bytes", d.snapshot_bytes},
                             {"model_bytes", d.model_bytes},
                             {"frames", FramesJson(snapshot, d.frames)}};
  } else {
    j["first_divergence"] = nullptr;
  }
  nlohmann::ordered_json ooms = nlohmann::ordered_json::array();
  for (const ReplayOom& oom : r.ooms)
    ooms.push_back({{"event", oom.event},
                    {"size", oom.size},
                    {"stream", oom.stream},
                    {"reserved_bytes", oom.snapshot_reserved},
                    {"frames", FramesJson(snapshot, oom.frames)}});
  j["ooms"] = ooms;
  return j.dump(2) + "\n";
}

std::string SegmentList(const std::vector<int64_t>& sizes) {
  constexpr size_t kShown = 8;
  std::string out;
  for (size_t i = 0; i < sizes.size() && i < kShown; ++i)
    out += (i ? ", " : "") + FormatBytes(sizes[i]);
  if (sizes.size() > kShown) out += ", ... (" + std::to_string(sizes.size()) + " in all)";
  return out.empty() ? "none" : out;
}

std::string RenderText(const std::string& path, const std::string& alloc_conf,
                       const MemorySnapshot& snapshot, const SnapshotReplayResult& r) {
  std::ostringstream s;
  s << "memplan replay " << path << ": device " << snapshot.device << ", " << r.allocations
    << " allocations and " << r.frees << " frees on " << r.streams << " stream(s)\n";
  if (r.preexisting_blocks > 0) {
    s << "  the trace began with " << r.preexisting_blocks << " blocks ("
      << FormatBytes(r.preexisting_bytes)
      << ") live: allocated first, in address order (their layout is not in the trace)\n";
  }
  s << "  peak of live requested bytes: " << FormatBytes(r.peak_requested) << "\n";
  if (!alloc_conf.empty())
    s << "  the model runs with PYTORCH_CUDA_ALLOC_CONF=" << alloc_conf << "\n";
  s << "\n";
  s << "                      PyTorch (snapshot)   memplan's caching model\n";
  auto row = [&s](const char* what, const std::string& a, const std::string& b) {
    s << "  " << what;
    for (size_t i = std::string_view(what).size(); i < 20; ++i) s << ' ';
    s << a;
    for (size_t i = a.size(); i < 21; ++i) s << ' ';
    s << b << "\n";
  };
  row("reserved at start", FormatBytes(r.snapshot_start_reserved),
      FormatBytes(r.model_start_reserved));
  row("reserved peak", FormatBytes(r.snapshot_peak_reserved), FormatBytes(r.model_peak_reserved));
  row("reserved at end", FormatBytes(r.snapshot_end_reserved), FormatBytes(r.model_end_reserved));
  row("segments made", std::to_string(r.snapshot_segments_made),
      std::to_string(r.model_segments_made));
  s << "  segments at end, PyTorch: " << SegmentList(r.snapshot_end_segments) << "\n";
  s << "  segments at end, model:   " << SegmentList(r.model_end_segments) << "\n\n";
  if (!r.first_divergence) {
    s << "no divergence: the model made the segments PyTorch made, at the same requests\n";
  } else {
    const ReplayDivergence& d = *r.first_divergence;
    s << "first divergent event: #" << d.event << " " << SnapshotActionName(d.action) << " of "
      << FormatBytes(d.size) << " on stream " << d.stream << ": PyTorch "
      << (d.action == SnapshotAction::kAlloc ? "reserved " : "released ")
      << FormatBytes(d.snapshot_bytes) << ", the model " << FormatBytes(d.model_bytes) << "\n"
      << "  at " << FrameText(snapshot, d.frames) << "\n"
      << "  (" << r.divergent_events << " divergent events in all)\n";
  }
  for (const ReplayOom& oom : r.ooms) {
    s << "out of memory at event #" << oom.event << ": a request of " << FormatBytes(oom.size)
      << " on stream " << oom.stream << " with " << FormatBytes(oom.snapshot_reserved)
      << " reserved, at " << FrameText(snapshot, oom.frames) << "\n";
  }
  return s.str();
}

int RunReplay(const ReplayFlags& flags) {
  if (flags.snapshot.empty())
    return ReportError("replay: a snapshot is required (tools/snapshot_to_json.py's output)");
  Expected<MemorySnapshot> snapshot = ReadMemorySnapshot(flags.snapshot);
  if (!snapshot.ok()) return ReportError(snapshot.error().message);
  Expected<AllocatorConfig> config = ParseAllocatorConfig(flags.alloc_conf);
  if (!config.ok()) return ReportError("--alloc-conf: " + config.error().message);
  if (config->expandable_segments)
    return ReportError(
        "--alloc-conf: expandable_segments:True is not replayed yet (segment_map "
        "events); the default allocator and max_split_size_mb / "
        "roundup_power2_divisions are");
  Expected<SnapshotReplayResult> result = ReplaySnapshot(*snapshot, config->caching);
  if (!result.ok()) return ReportError(flags.snapshot + ": " + result.error().message);
  const std::string conf = AllocatorConfigString(*config);
  const std::string out = flags.json ? RenderJson(flags.snapshot, conf, *snapshot, *result)
                                     : RenderText(flags.snapshot, conf, *snapshot, *result);
  if (Status written = WriteStdout(out); !written.ok()) return ReportError(written.error().message);
  return kExitSuccess;
}

}  // namespace

Verb AddReplayCommand(CLI::App& app) {
  const auto [command, flags] = AddVerb<ReplayFlags>(
      app, "replay",
      "replay a PyTorch memory snapshot through memplan's caching-allocator model and name the "
      "first event where the two differ");
  command->add_option("snapshot", flags->snapshot,
                      "the snapshot as tools/snapshot_to_json.py writes it");
  command->add_option("--alloc-conf", flags->alloc_conf,
                      "PYTORCH_CUDA_ALLOC_CONF for the model (max_split_size_mb:N, "
                      "roundup_power2_divisions:N): what PyTorch would have reserved with it");
  command->add_flag("--json", flags->json, "print JSON instead of text");
  return VerbRunning(command, flags, RunReplay);
}

}  // namespace memplan::cli
