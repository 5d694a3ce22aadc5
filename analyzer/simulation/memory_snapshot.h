#pragma once
// PyTorch's CUDA memory snapshot, as tools/snapshot_to_json.py writes it ("memplan-snapshot/1").
//
// torch.cuda.memory._snapshot() (torch/cuda/memory.py; drawn by torch/cuda/_memory_viz.py) is a
// dict of the segments at the time of the snapshot (each with its blocks and their frames) and,
// per device, the trace of the allocator's actions recorded since
// torch.cuda.memory._record_memory_history(): alloc (addr = the block, size = the requested
// bytes), free_requested / free_completed (the block returns to its pool at free_completed),
// segment_alloc / segment_free (cudaMalloc / cudaFree of a whole segment; size = its bytes),
// segment_map / segment_unmap (expandable segments), oom (size = the request that failed) and
// snapshot. The converter keeps one device; this is the C++ side of it (why a converter:
// tools/snapshot_to_json.py's docstring, docs/snapshots.md).
//
// Bad input (not JSON, another schema, a field of the wrong type, a size above 2^50 bytes, a
// frame id out of range) is an Error naming the first offending field, never an exception.

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "graph/expected.h"

namespace memplan {

inline constexpr const char* kMemorySnapshotSchema = "memplan-snapshot/1";
// Sizes and addresses above this are refused: 1 PiB is beyond any device, and leaves the sums of
// a replay (reserved bytes, a segment's blocks) far from overflowing int64_t.
inline constexpr int64_t kMaxSnapshotBytes = int64_t{1} << 50;

struct SnapshotFrame {
  std::string filename;
  int64_t line = 0;
  std::string name;
};

enum class SnapshotAction {
  kAlloc,
  kFreeRequested,
  kFreeCompleted,
  kSegmentAlloc,
  kSegmentFree,
  kSegmentMap,
  kSegmentUnmap,
  kOom,
  kSnapshot,
};
std::string_view SnapshotActionName(SnapshotAction action);

struct SnapshotEvent {
  SnapshotAction action = SnapshotAction::kAlloc;
  int64_t address = 0;
  int64_t size = 0;
  int64_t stream = 0;
  std::vector<int32_t> frames;  // indices into MemorySnapshot::frames, innermost first
  // oom only: the bytes CUDA still reported free when the request failed (TraceEntry's
  // device_free); -1 when the trace did not record it. PyTorch's reserved bytes there plus this
  // is the most PyTorch could have reserved on the device: `memplan explain`'s capacity.
  int64_t device_free = -1;
};

struct SnapshotBlock {
  int64_t address = 0;
  int64_t size = 0;            // the block's bytes (rounded)
  int64_t requested_size = 0;  // what the caller asked for
  bool allocated = false;      // state "active_allocated" (or "active_awaiting_free")
  std::vector<int32_t> frames;
};

struct SnapshotSegment {
  int64_t address = 0;
  int64_t total_size = 0;
  int64_t stream = 0;
  bool small = false;  // segment_type "small" (the 2 MiB segments of requests <= 1 MiB)
  std::vector<SnapshotBlock> blocks;
};

struct MemorySnapshot {
  int64_t device = 0;
  std::vector<SnapshotFrame> frames;
  std::vector<SnapshotSegment> segments;  // at the time of the snapshot
  std::vector<SnapshotEvent> events;      // the device's trace, oldest first
};

// Reads the converter's document. Errors name the field: "events[12]: size 2^60 is above 2^50".
Expected<MemorySnapshot> ParseMemorySnapshot(const nlohmann::json& document);

// Reads the file at `path` (plain JSON; the converter writes .json unless told .gz, which is
// refused here with the command that unpacks it). Errors start with the path.
Expected<MemorySnapshot> ReadMemorySnapshot(const std::string& path);

}  // namespace memplan
