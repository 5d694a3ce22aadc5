#include "analyzer/simulation/caching_peak_memo.h"

namespace memplan {
namespace {

// splitmix64's finaliser: every bit of the sum moves the hash.
uint64_t Mix(uint64_t x) {
  x ^= x >> 30;
  x *= 0xbf58476d1ce4e5b9ULL;
  x ^= x >> 27;
  x *= 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

// A polynomial hash of the rounded sizes, mixed once at the end: one multiply-add per buffer
// (the memo hashes every buffer at every probe). A collision costs only the comparison below.
uint64_t HashOfRounded(const std::vector<int64_t>& sizes, const CachingAllocator& model) {
  uint64_t h = sizes.size();
  for (const int64_t bytes : sizes)
    h = h * 0x9e3779b97f4a7c15ULL + static_cast<uint64_t>(model.RoundSize(bytes));
  return Mix(h);
}

bool SameRounded(const std::vector<int64_t>& a, const std::vector<int64_t>& b,
                 const CachingAllocator& model) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i)
    if (model.RoundSize(a[i]) != model.RoundSize(b[i])) return false;
  return true;
}

}  // namespace

std::optional<ScriptPeaks> CachingPeakMemo::Remembered(const AllocationScript& script,
                                                       uint64_t hash,
                                                       const std::vector<int64_t>& sizes,
                                                       const SizesAt& sizes_at,
                                                       const CachingAllocator& model) {
  auto found = by_hash_.find(hash);
  if (found == by_hash_.end()) return std::nullopt;
  for (const Entry& e : found->second) {
    Expected<std::vector<int64_t>> earlier = sizes_at(e.m);
    MEMPLAN_CHECK(earlier.ok());  // evaluated without error before, and it is deterministic
    if (!SameRounded(*earlier, sizes, model)) continue;
    ++hits_;
    ScriptPeaks peaks;
    peaks.live_bytes = script.LivePeak(sizes);
    peaks.allocated_bytes = e.allocated_bytes;
    peaks.reserved_bytes = e.reserved_bytes;
    return peaks;
  }
  return std::nullopt;
}

ScriptPeaks CachingPeakMemo::PeaksAt(const AllocationScript& script, int64_t m,
                                     const std::vector<int64_t>& sizes, const SizesAt& sizes_at,
                                     CachingAllocator& model) {
  const uint64_t hash = HashOfRounded(sizes, model);
  if (std::optional<ScriptPeaks> peaks = Remembered(script, hash, sizes, sizes_at, model))
    return *peaks;
  const ScriptPeaks peaks = script.Replay(sizes, model);
  by_hash_[hash].push_back(Entry{m, peaks.allocated_bytes, peaks.reserved_bytes});
  return peaks;
}

std::optional<ScriptPeaks> CachingPeakMemo::PeaksWithin(
    const AllocationScript& script, int64_t m, const std::vector<int64_t>& sizes,
    const SizesAt& sizes_at, CachingAllocator& model, int64_t reserved_limit, int64_t live_limit) {
  const uint64_t hash = HashOfRounded(sizes, model);
  if (std::optional<ScriptPeaks> peaks = Remembered(script, hash, sizes, sizes_at, model))
    return peaks;
  std::optional<ScriptPeaks> peaks = script.ReplayWithin(sizes, model, reserved_limit, live_limit);
  if (peaks) by_hash_[hash].push_back(Entry{m, peaks->allocated_bytes, peaks->reserved_bytes});
  return peaks;
}

}  // namespace memplan
