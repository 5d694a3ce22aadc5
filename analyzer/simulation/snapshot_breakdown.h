#pragma once
// What held memory at one point of a PyTorch memory snapshot's trace (`memplan explain`): the
// blocks live just before that event, by category, with PyTorch's reserved bytes there.
//
// The point: the first OOM event (the request that failed is not live: it is reported beside),
// else the event after which PyTorch's reserved bytes peaked (snapshot_replay.h finds both).
//
// Categories come from the Python frames PyTorch recorded with each alloc, innermost first; the
// first rule that matches any frame wins:
//   optimizer_state  a frame in torch/optim/ (states made lazily by the first step, the foreach
//                    intermediates of a step)
//   parameters       torch/nn/modules/module.py's _apply (model.to / .cuda)
//   backward         a frame in torch/autograd/ (loss.backward(): gradients and backward
//                    temporaries; the trace cannot tell them apart)
//   activations      any other frame (the forward and the user's code)
//   unattributed     no frame recorded
// A rule of thumb from where the call came from, not a tensor's role: a parameter made by
// torch.empty in user code counts as an activation. Bytes are requested bytes; `cached_free` is
// PyTorch's reserved bytes less the live blocks' rounded bytes (512 B rounding).

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "analyzer/simulation/memory_snapshot.h"
#include "graph/expected.h"

namespace memplan {

enum class SnapshotCategory {
  kParameters,
  kOptimizerState,
  kBackward,
  kActivations,
  kUnattributed
};
inline constexpr int kSnapshotCategories = 5;
std::string_view SnapshotCategoryName(SnapshotCategory category);
SnapshotCategory CategoryOfFrames(const MemorySnapshot& snapshot,
                                  const std::vector<int32_t>& frames);

struct SnapshotLiveBlock {
  int64_t address = 0;
  int64_t size = 0;  // requested
  int64_t stream = 0;
  SnapshotCategory category = SnapshotCategory::kUnattributed;
  std::vector<int32_t> frames;
};

struct SnapshotBreakdown {
  int64_t event = -1;         // the focus: blocks live just before it (after it, for a peak)
  bool at_oom = false;        // the focus is an OOM event
  int64_t oom_request = 0;    // the failed request's bytes (at_oom)
  int64_t reserved = 0;       // PyTorch's reserved bytes there
  int64_t live_bytes = 0;     // requested bytes of the live blocks
  int64_t rounded_bytes = 0;  // the same rounded to 512 B (what the blocks occupy)
  int64_t cached_free = 0;    // reserved - rounded_bytes
  int64_t by_category[kSnapshotCategories] = {};
  std::vector<SnapshotLiveBlock> largest;  // the largest live blocks, largest first
};

// The breakdown at `event` (an index into snapshot.events, or -1 for the start of the trace),
// counting the blocks live after it (before it for an oom event), given PyTorch's reserved bytes
// there. `keep` largest blocks are listed. Errors as ReplaySnapshot's for an inconsistent trace.
Expected<SnapshotBreakdown> BreakdownAt(const MemorySnapshot& snapshot, int64_t event,
                                        int64_t reserved, size_t keep = 10);

}  // namespace memplan
