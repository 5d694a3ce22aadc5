#pragma once
// `memplan replay`: a PyTorch memory snapshot's recorded requests through memplan's
// caching-allocator model (analyzer/simulation/caching_allocator.h), beside what the snapshot's
// own segment events say. Where the two agree, the allocator model is right for that program and
// any error of a prediction is in the requests memplan derived (sizes, order, lifetimes); where
// they differ, the first divergent event names the allocator rule to look at.
//
// What is replayed, event by event (PyTorch's trace order, torch/cuda/memory.py):
//  * alloc        -> Allocate(size) in the model of the event's stream (PyTorch's pools are per
//                    stream: a block is only reused by its own stream, a segment belongs to one),
//                    and the bytes the model reserved for it are compared with the segment_alloc
//                    events the trace recorded since the previous alloc (alloc_block records the
//                    cudaMalloc before the alloc it serves);
//  * free_completed -> Free (the block is back in its pool; free_requested only marks the call);
//  * a run of segment_free -> ReleaseCachedSegments() on every stream (empty_cache, or the
//                    release before an OOM retry), compared by bytes;
//  * oom          -> recorded (the request that failed and where).
// Blocks freed in the trace but allocated before it began (the trace is a ring buffer of
// max_entries), and blocks the final segments hold that the trace never mentions, are allocated
// first, in address order: the model starts from their live set, not from their layout, so a
// divergence while those are live may be the reconstruction's, which the report says.

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "analyzer/simulation/caching_allocator.h"
#include "analyzer/simulation/memory_snapshot.h"
#include "graph/expected.h"

namespace memplan {

struct ReplayDivergence {
  int64_t event = -1;  // index into MemorySnapshot::events
  SnapshotAction action = SnapshotAction::kAlloc;
  int64_t size = 0;  // the request's (alloc) or the run's released bytes (segment_free)
  int64_t stream = 0;
  int64_t snapshot_bytes = 0;  // what PyTorch reserved (+) or released for it
  int64_t model_bytes = 0;     // what the model did
  std::vector<int32_t> frames;
};

struct ReplayOom {
  int64_t event = -1;
  int64_t size = 0;
  int64_t stream = 0;
  int64_t snapshot_reserved = 0;  // PyTorch's reserved bytes when it gave up
  std::vector<int32_t> frames;
};

struct SnapshotReplayResult {
  int64_t allocations = 0;  // alloc events replayed
  int64_t frees = 0;        // free_completed events replayed
  int64_t preexisting_blocks = 0;
  int64_t preexisting_bytes = 0;
  int64_t streams = 0;
  // Reserved bytes: PyTorch's from its segment events (starting from the segments that
  // existed when the trace began), the model's from its own segments.
  int64_t snapshot_start_reserved = 0;
  int64_t snapshot_peak_reserved = 0;
  int64_t snapshot_end_reserved = 0;
  int64_t snapshot_segments_made = 0;  // segment_alloc events
  int64_t model_start_reserved = 0;    // after the preexisting blocks
  int64_t model_peak_reserved = 0;
  int64_t model_end_reserved = 0;
  int64_t model_segments_made = 0;
  int64_t peak_requested = 0;  // live requested bytes, maximum over the trace
  int64_t model_peak_allocated = 0;
  int64_t event_of_snapshot_peak = -1;         // the event after which PyTorch's reserved peaked
  std::vector<int64_t> snapshot_end_segments;  // the final segments' sizes, by address
  std::vector<int64_t> model_end_segments;     // the model's, by stream then creation
  std::optional<ReplayDivergence> first_divergence;
  int64_t divergent_events = 0;  // alloc/segment_free events where the two differ
  std::vector<ReplayOom> ooms;
};

// Errors: an event inconsistent with the trace (a free of an address that is not allocated, an
// alloc of an address already live, segment_map/unmap: expandable segments are not replayed
// yet), or segment events that leave the reserved bytes negative.
Expected<SnapshotReplayResult> ReplaySnapshot(const MemorySnapshot& snapshot,
                                              const CachingAllocatorOptions& options = {});

}  // namespace memplan
