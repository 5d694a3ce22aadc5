#include "analyzer/simulation/snapshot_replay.h"

#include <algorithm>
#include <memory>
#include <string>
#include <unordered_map>
#include <unordered_set>

namespace memplan {
namespace {

struct LiveBlock {
  int64_t stream = 0;
  int64_t handle = 0;
  int64_t size = 0;  // requested bytes
};

bool IsFree(SnapshotAction action) {
  return action == SnapshotAction::kFreeRequested || action == SnapshotAction::kFreeCompleted;
}

// The replay's state: one model per stream, the live blocks by address.
class Replayer {
 public:
  Replayer(const MemorySnapshot& snapshot, const CachingAllocatorOptions& options)
      : snapshot_(snapshot), options_(options) {}

  Expected<SnapshotReplayResult> Run() {
    MEMPLAN_RETURN_IF_ERROR(StartingReserved());
    MEMPLAN_RETURN_IF_ERROR(AllocatePreexisting());
    result_.model_start_reserved = ModelReserved();
    result_.model_peak_reserved = result_.model_start_reserved;
    snapshot_reserved_ = result_.snapshot_start_reserved;
    result_.snapshot_peak_reserved = snapshot_reserved_;
    const auto& events = snapshot_.events;
    for (size_t i = 0; i < events.size(); ++i) {
      const auto index = static_cast<int64_t>(i);
      MEMPLAN_RETURN_IF_ERROR(Apply(index, events[i]));
      if (snapshot_reserved_ > result_.snapshot_peak_reserved) {
        result_.snapshot_peak_reserved = snapshot_reserved_;
        result_.event_of_snapshot_peak = index;
      }
      result_.model_peak_reserved = std::max(result_.model_peak_reserved, ModelReserved());
      result_.model_peak_allocated = std::max(result_.model_peak_allocated, ModelAllocated());
      result_.peak_requested = std::max(result_.peak_requested, live_requested_);
    }
    if (run_start_ >= 0) CompareRun(run_start_, run_snapshot_, run_model_);
    RecordEndState();
    return std::move(result_);
  }

 private:
  // One event of the trace: the snapshot's own reserved bytes follow its segment events, the
  // model's follow the allocations and frees.
  Status Apply(int64_t index, const SnapshotEvent& e) {
    const std::string at = "events[" + std::to_string(index) + "]: ";
    if (e.action != SnapshotAction::kSegmentFree && run_start_ >= 0) {
      CompareRun(run_start_, run_snapshot_, run_model_);
      run_start_ = -1;
    }
    switch (e.action) {
      case SnapshotAction::kSegmentAlloc:
        pending_segments_ += e.size;
        snapshot_reserved_ += e.size;
        ++result_.snapshot_segments_made;
        return OkStatus();
      case SnapshotAction::kSegmentFree:
        return SegmentFreed(index, e, at);
      case SnapshotAction::kAlloc:
        return Allocated(index, e, at);
      case SnapshotAction::kFreeCompleted: {
        auto it = live_.find(e.address);
        if (it == live_.end())
          return MakeError(at + "free_completed at an address (" + std::to_string(e.address) +
                           ") that is not allocated");
        ModelOf(it->second.stream).Free(it->second.handle);
        live_requested_ -= it->second.size;
        live_.erase(it);
        ++result_.frees;
        return OkStatus();
      }
      case SnapshotAction::kOom:
        result_.ooms.push_back(ReplayOom{index, e.size, e.stream, snapshot_reserved_, e.frames});
        return OkStatus();
      case SnapshotAction::kSegmentMap:
      case SnapshotAction::kSegmentUnmap:
        return MakeError(at +
                         "segment_map/unmap (expandable_segments:True): the replay models "
                         "the default caching allocator only");
      case SnapshotAction::kFreeRequested:
      case SnapshotAction::kSnapshot:
        return OkStatus();
    }
    return OkStatus();
  }

  // A run of segment_free events is PyTorch releasing its cached segments (an OOM's retry,
  // empty_cache): the model releases its own at the run's first event and the run's bytes are
  // compared when it ends.
  Status SegmentFreed(int64_t index, const SnapshotEvent& e, const std::string& at) {
    if (run_start_ < 0) {
      run_start_ = index;
      run_snapshot_ = 0;
      run_model_ = 0;
      for (auto& [stream, model] : models_) run_model_ += model->ReleaseCachedSegments();
    }
    run_snapshot_ += e.size;
    snapshot_reserved_ -= e.size;
    if (snapshot_reserved_ < 0)
      return MakeError(at + "segment_free of more bytes than the trace holds reserved");
    return OkStatus();
  }

  // An allocation: the segments the model makes for it against the segment_alloc events that
  // came before it in the trace.
  Status Allocated(int64_t index, const SnapshotEvent& e, const std::string& at) {
    if (live_.count(e.address) != 0)
      return MakeError(at + "alloc at an address (" + std::to_string(e.address) +
                       ") that is already allocated");
    CachingAllocator& model = ModelOf(e.stream);
    const int64_t before = model.reserved_bytes();
    const int64_t segments_before = model.num_segments();
    Allocate(model, e.address, e.size, e.stream);
    const int64_t made = model.reserved_bytes() - before;
    result_.model_segments_made += model.num_segments() - segments_before;
    ++result_.allocations;
    if (made != pending_segments_)
      Diverged(index, e, /*snapshot_bytes=*/pending_segments_, /*model_bytes=*/made);
    pending_segments_ = 0;
    return OkStatus();
  }

  // The segment layouts at the end: the snapshot's final segments by address, the model's by
  // stream.
  void RecordEndState() {
    result_.snapshot_end_reserved = snapshot_reserved_;
    result_.model_end_reserved = ModelReserved();
    std::vector<std::pair<int64_t, int64_t>> final_segments;
    for (const SnapshotSegment& s : snapshot_.segments)
      final_segments.emplace_back(s.address, s.total_size);
    std::sort(final_segments.begin(), final_segments.end());
    for (const auto& [address, size] : final_segments)
      result_.snapshot_end_segments.push_back(size);
    for (const auto& [stream, model] : models_)
      for (int64_t size : model->SegmentSizes()) result_.model_end_segments.push_back(size);
    result_.streams = static_cast<int64_t>(models_.size());
  }

  // The reserved bytes when the trace began: the final segments, less the ones the trace made,
  // plus the ones it released.
  Status StartingReserved() {
    int64_t reserved = 0;
    for (const SnapshotSegment& s : snapshot_.segments) reserved += s.total_size;
    for (const SnapshotEvent& e : snapshot_.events) {
      if (e.action == SnapshotAction::kSegmentAlloc) reserved -= e.size;
      if (e.action == SnapshotAction::kSegmentFree) reserved += e.size;
    }
    if (reserved < 0)
      return MakeError(
          "the trace's segment_alloc events add up to more than the final "
          "segments hold: not one snapshot's trace");
    result_.snapshot_start_reserved = reserved;
    return OkStatus();
  }

  // Blocks live when the trace began: freed before the trace allocates them, or allocated in
  // the final segments and never named by an alloc or free.
  Status AllocatePreexisting() {
    std::unordered_set<int64_t> named;
    std::vector<std::pair<int64_t, LiveBlock>> before;  // (address, block)
    for (const SnapshotEvent& e : snapshot_.events) {
      if (e.action != SnapshotAction::kAlloc && !IsFree(e.action)) continue;
      if (named.insert(e.address).second && IsFree(e.action))
        before.emplace_back(e.address, LiveBlock{e.stream, 0, e.size});
    }
    for (const SnapshotSegment& s : snapshot_.segments)
      for (const SnapshotBlock& b : s.blocks)
        if (b.allocated && named.count(b.address) == 0)
          before.emplace_back(b.address, LiveBlock{s.stream, 0, b.requested_size});
    std::sort(before.begin(), before.end(),
              [](const auto& a, const auto& b) { return a.first < b.first; });
    for (const auto& [address, block] : before) {
      if (live_.count(address) != 0)
        return MakeError("two blocks live at address " + std::to_string(address) +
                         " when the trace begins");
      Allocate(ModelOf(block.stream), address, block.size, block.stream);
      ++result_.preexisting_blocks;
      result_.preexisting_bytes += block.size;
    }
    return OkStatus();
  }

  void Allocate(CachingAllocator& model, int64_t address, int64_t size, int64_t stream) {
    const int64_t handle = next_handle_++;
    const bool ok = model.Allocate(handle, size);
    MEMPLAN_CHECK(ok);  // no capacity: the model never refuses
    live_.emplace(address, LiveBlock{stream, handle, size});
    live_requested_ += size;
  }

  void CompareRun(int64_t start, int64_t snapshot_bytes, int64_t model_bytes) {
    if (snapshot_bytes == model_bytes) return;
    const SnapshotEvent& e = snapshot_.events[static_cast<size_t>(start)];
    ReplayDivergence d{start,          e.action,    snapshot_bytes, e.stream,
                       snapshot_bytes, model_bytes, e.frames};
    ++result_.divergent_events;
    if (!result_.first_divergence) result_.first_divergence = std::move(d);
  }

  void Diverged(int64_t index, const SnapshotEvent& e, int64_t snapshot_bytes,
                int64_t model_bytes) {
    ++result_.divergent_events;
    if (result_.first_divergence) return;
    result_.first_divergence =
        ReplayDivergence{index, e.action, e.size, e.stream, snapshot_bytes, model_bytes, e.frames};
  }

  CachingAllocator& ModelOf(int64_t stream) {
    auto it = models_.find(stream);
    if (it == models_.end())
      it = models_.emplace(stream, std::make_unique<CachingAllocator>(options_)).first;
    return *it->second;
  }
  int64_t ModelReserved() const {
    int64_t total = 0;
    for (const auto& [stream, model] : models_) total += model->reserved_bytes();
    return total;
  }
  int64_t ModelAllocated() const {
    int64_t total = 0;
    for (const auto& [stream, model] : models_) total += model->allocated_bytes();
    return total;
  }

  const MemorySnapshot& snapshot_;
  const CachingAllocatorOptions& options_;
  std::map<int64_t, std::unique_ptr<CachingAllocator>> models_;  // by stream, in stream order
  std::unordered_map<int64_t, LiveBlock> live_;                  // by address
  int64_t next_handle_ = 0;
  int64_t live_requested_ = 0;
  int64_t snapshot_reserved_ = 0;  // the snapshot's reserved bytes after the events so far
  int64_t pending_segments_ = 0;   // segment_alloc bytes since the last alloc
  int64_t run_start_ = -1;         // the current run of segment_free events
  int64_t run_snapshot_ = 0, run_model_ = 0;
  SnapshotReplayResult result_;
};

}  // namespace

Expected<SnapshotReplayResult> ReplaySnapshot(const MemorySnapshot& snapshot,
                                              const CachingAllocatorOptions& options) {
  Replayer replayer(snapshot, options);
  return replayer.Run();
}

}  // namespace memplan
