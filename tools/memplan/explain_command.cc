// `memplan explain SNAPSHOT [--json]`: at a PyTorch memory snapshot's OOM (or its reserved peak),
// what held the memory: live bytes by category (analyzer/simulation/snapshot_breakdown.h), the
// bytes PyTorch kept cached but free, and the largest live blocks with their frames.
// SNAPSHOT is tools/snapshot_to_json.py's output.
#include <memory>
#include <sstream>
#include <string>

#include <nlohmann/json.hpp>

#include "analyzer/simulation/memory_snapshot.h"
#include "analyzer/simulation/snapshot_breakdown.h"
#include "analyzer/simulation/snapshot_replay.h"
#include "analyzer/text/memory_size.h"
#include "tools/memplan/cli_common.h"
#include "tools/memplan/commands.h"

namespace memplan::cli {
namespace {

struct ExplainFlags {
  std::string snapshot;
  bool json = false;
};

std::string FrameText(const MemorySnapshot& snapshot, const std::vector<int32_t>& frames) {
  if (frames.empty()) return "(no frames recorded)";
  const SnapshotFrame& f = snapshot.frames[static_cast<size_t>(frames.front())];
  return f.filename + ":" + std::to_string(f.line) + " " + f.name;
}

// What the allocator's rules say about the OOM's cached-but-free bytes: before failing, PyTorch
// released every segment with no live block (release_cached_blocks), so what is still cached
// sits in segments that also hold live blocks. A request larger than any such free piece needs
// a new segment even when their sum would hold it: fragmentation, which
// expandable_segments:True removes by growing one segment per stream instead.
std::string OomAdvice(const SnapshotBreakdown& b) {
  std::ostringstream s;
  if (b.cached_free >= b.oom_request) {
    s << "  PyTorch held " << FormatBytes(b.cached_free)
      << " cached but free, more than the request, in segments that also hold live blocks\n"
      << "  (it releases the all-free ones before failing): fragmentation. "
         "PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True\n"
      << "  lets a stream grow one segment instead of needing a new one of the request's size.\n";
  } else {
    s << "  The request exceeds the " << FormatBytes(b.cached_free)
      << " PyTorch held cached but free: the live blocks themselves\n"
      << "  must shrink (a smaller micro-batch, recompute, lower precision; `memplan analyze "
         "MODEL.onnx --gpu ...` plans them).\n";
  }
  return s.str();
}

std::string RenderText(const std::string& path, const MemorySnapshot& snapshot,
                       const SnapshotBreakdown& b) {
  std::ostringstream s;
  s << "memplan explain " << path << ": device " << snapshot.device << "\n";
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
    const std::string name(SnapshotCategoryName(static_cast<SnapshotCategory>(c)));
    s << "  " << name << std::string(name.size() < 18 ? 18 - name.size() : 1, ' ')
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
  if (b.at_oom) s << "\n" << OomAdvice(b);
  return s.str();
}

std::string RenderJson(const std::string& path, const MemorySnapshot& snapshot,
                       const SnapshotBreakdown& b) {
  nlohmann::ordered_json j;
  j["schema"] = "memplan/1";
  j["command"] = "explain";
  j["snapshot"] = path;
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
  for (const SnapshotLiveBlock& block : b.largest) {
    nlohmann::ordered_json frames = nlohmann::ordered_json::array();
    for (int32_t id : block.frames) {
      const SnapshotFrame& f = snapshot.frames[static_cast<size_t>(id)];
      frames.push_back({{"filename", f.filename}, {"line", f.line}, {"name", f.name}});
    }
    largest.push_back({{"bytes", block.size},
                       {"category", std::string(SnapshotCategoryName(block.category))},
                       {"stream", block.stream},
                       {"frames", frames}});
  }
  j["largest_blocks"] = largest;
  return j.dump(2) + "\n";
}

int RunExplain(const ExplainFlags& flags) {
  if (flags.snapshot.empty())
    return ReportError("explain: a snapshot is required (tools/snapshot_to_json.py's output)");
  Expected<MemorySnapshot> snapshot = ReadMemorySnapshot(flags.snapshot);
  if (!snapshot.ok()) return ReportError(snapshot.error().message);
  // The replay finds the focus (the first OOM, else PyTorch's reserved peak) and checks the
  // trace's consistency.
  Expected<SnapshotReplayResult> replay = ReplaySnapshot(*snapshot);
  if (!replay.ok()) return ReportError(flags.snapshot + ": " + replay.error().message);
  int64_t event = replay->event_of_snapshot_peak;
  int64_t reserved = replay->snapshot_peak_reserved;
  if (!replay->ooms.empty()) {
    event = replay->ooms.front().event;
    reserved = replay->ooms.front().snapshot_reserved;
  }
  Expected<SnapshotBreakdown> breakdown = BreakdownAt(*snapshot, event, reserved);
  if (!breakdown.ok()) return ReportError(flags.snapshot + ": " + breakdown.error().message);
  const std::string out = flags.json ? RenderJson(flags.snapshot, *snapshot, *breakdown)
                                     : RenderText(flags.snapshot, *snapshot, *breakdown);
  if (Status written = WriteStdout(out); !written.ok()) return ReportError(written.error().message);
  return kExitSuccess;
}

}  // namespace

Verb AddExplainCommand(CLI::App& app) {
  const auto [command, flags] = AddVerb<ExplainFlags>(
      app, "explain",
      "what held GPU memory at a PyTorch memory snapshot's OOM (or peak), by category, with the "
      "largest blocks");
  command->add_option("snapshot", flags->snapshot,
                      "the snapshot as tools/snapshot_to_json.py writes it");
  command->add_flag("--json", flags->json, "print JSON instead of text");
  return VerbRunning(command, flags, RunExplain);
}

}  // namespace memplan::cli
