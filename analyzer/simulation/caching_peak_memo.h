#pragma once
// The caching allocator model's peaks, memoised by the rounded request sizes.
//
// Why it is exact: CachingAllocator::Allocate rounds every request first (RoundSize: a multiple
// of 512 bytes) and decides everything - the pool, the best fit, the split, the segment, the
// allocated and reserved bytes - from the rounded size alone. So two replays of one allocation
// script whose buffers round to the same sizes make the model take the same decisions, and its
// allocated and reserved peaks are equal. Close micro-batches often round alike (a [m, 16] fp32
// activation is 64 m bytes: eight consecutive m share a rounded size), and the planner's search
// probes neighbours of its crossing point (m and m + 1, the secant's guesses a few apart), so a
// good share of its replays repeat an earlier one. Only the exact live bytes differ; they are
// computed from the script without the model.
//
// Lookup: a 64-bit hash of the rounded sizes finds an earlier micro-batch; a hit is confirmed by
// comparing every rounded size of the two (re-evaluated at the earlier m), so a hash collision
// costs a replay, never a wrong answer.

#include <cstdint>
#include <functional>
#include <optional>
#include <unordered_map>
#include <vector>

#include "analyzer/simulation/allocation_script.h"
#include "analyzer/simulation/caching_allocator.h"
#include "graph/expected.h"

namespace memplan {

class CachingPeakMemo {
 public:
  // The buffers' sizes at micro-batch m, as the caller evaluated them for an earlier call.
  using SizesAt = std::function<Expected<std::vector<int64_t>>(int64_t m)>;

  // script.Replay(sizes, model) for the sizes at micro-batch m.
  // REQUIRES: every call of one memo passes the same script, model options and sizes_at, and
  // sizes_at(m) == sizes.
  ScriptPeaks PeaksAt(const AllocationScript& script, int64_t m, const std::vector<int64_t>& sizes,
                      const SizesAt& sizes_at, CachingAllocator& model);

  // The same with script.ReplayWithin(sizes, model, reserved_limit, live_limit): an earlier
  // replay that rounds alike answers exactly (whatever the limits); otherwise a replay that
  // stops past a limit (nullopt) is not remembered, one that runs to the end is.
  std::optional<ScriptPeaks> PeaksWithin(const AllocationScript& script, int64_t m,
                                         const std::vector<int64_t>& sizes, const SizesAt& sizes_at,
                                         CachingAllocator& model, int64_t reserved_limit,
                                         int64_t live_limit);

  int64_t hits() const { return hits_; }  // calls answered without a replay

 private:
  // The peaks of an earlier replay whose sizes round as `sizes` do, if any.
  std::optional<ScriptPeaks> Remembered(const AllocationScript& script, uint64_t hash,
                                        const std::vector<int64_t>& sizes, const SizesAt& sizes_at,
                                        const CachingAllocator& model);

  struct Entry {
    int64_t m = 0;
    int64_t allocated_bytes = 0;
    int64_t reserved_bytes = 0;
  };
  std::unordered_map<uint64_t, std::vector<Entry>> by_hash_;
  int64_t hits_ = 0;
};

}  // namespace memplan
