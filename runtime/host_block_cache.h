#pragma once
// Freed host blocks kept for the next request of the same byte size.
//
// A training run asks for the same buffer sizes every micro-batch. Handed back to glibc, a large
// freed block is unmapped (or trimmed off the heap top) and the next request of that size faults
// every page in again: on a CPU `verify` of ResNet-18 that was about a fifth of the run, all of it
// system time. Keeping the block and handing it out again costs no page faults.
//
// The cache never makes the process hold more than its own high-water mark: a freed block is kept
// only while the blocks in use plus the blocks kept stay within the most that was ever in use at
// once; past that it goes back to the heap. Only host storage is kept: what an allocator *accounts*
// (the device bytes the simulator predicts) is counted by its caller, unchanged.
//
// Not thread-safe, like the counting allocator that owns it.

#include <cstddef>
#include <cstdint>
#include <unordered_map>
#include <vector>

namespace memplan {

// Host storage aligned to Allocator::kAlignment; a zero-byte request still gets a distinct
// pointer so a free can find it.
void* NewHostBlock(size_t bytes);
void DeleteHostBlock(void* ptr);

class HostBlockCache {
 public:
  HostBlockCache() = default;
  ~HostBlockCache();
  HostBlockCache(const HostBlockCache&) = delete;
  HostBlockCache& operator=(const HostBlockCache&) = delete;

  // A block of exactly `bytes` usable bytes (NewHostBlock's alignment): a kept one when there is
  // one of that size, else a fresh one. Its contents are whatever they were (callers that need
  // zeros clear it). Never null, also for 0 bytes.
  void* Take(size_t bytes);
  // REQUIRES: ptr came from Take(bytes) on this cache and was not given back yet.
  void GiveBack(void* ptr, size_t bytes);

  size_t bytes_in_use() const { return in_use_; }
  size_t bytes_kept() const { return kept_; }
  // The most bytes ever in use at once: the bound on in use + kept.
  size_t high_water() const { return high_water_; }

 private:
  std::unordered_map<size_t, std::vector<void*>> kept_by_size_;
  size_t in_use_ = 0;
  size_t kept_ = 0;
  size_t high_water_ = 0;
};

}  // namespace memplan
