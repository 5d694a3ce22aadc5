#pragma once
// A model of PyTorch's CUDA caching allocator with expandable segments
// (PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True, c10/cuda/CUDACachingAllocator.cpp,
// `ExpandableSegment`): instead of one cudaMalloc per segment, each pool reserves one virtual
// address range and maps physical pages at its end as it grows, so blocks of any size can merge
// across what would have been separate segments.
//  * round_size and the small/large pools as in the caching allocator
//  (analyzer/simulation/caching_allocator.h);
//  * pages: 2 MiB (kSmallBuffer) in the small pool, 20 MiB (kLargeBuffer) in the large pool;
//  * get_free_block: best fit among the pool's free blocks (ties: the lowest address);
//  * otherwise the range grows: when its last block is free, by the request minus that block,
//    else by the whole request, rounded up to whole pages; the new pages join the last free block;
//  * should_split: under expandable segments both pools split a block when >= 512 bytes remain;
//  * free: the block merges with free neighbours; its pages stay mapped (reserved only grows).
// Not modelled: unmapping on out-of-memory (release_cached_blocks), so there is no capacity.
//
//   large pool: [ block | block | free        | free tail ][ next page mapped on demand ...
//               0                                        mapped

#include <cstdint>
#include <map>
#include <set>
#include <unordered_map>
#include <utility>

#include "analyzer/program/allocator_model.h"

namespace memplan {

struct ExpandableAllocatorOptions {
  int64_t min_block_size = 512;   // kMinBlockSize
  int64_t small_size = 1 << 20;   // kSmallSize: small-pool threshold, 1 MiB
  int64_t small_page = 2 << 20;   // kSmallBuffer: the small pool's mapping granularity
  int64_t large_page = 20 << 20;  // kLargeBuffer: the large pool's mapping granularity
};

class ExpandableAllocator final : public AllocatorModel {
 public:
  explicit ExpandableAllocator(ExpandableAllocatorOptions options = {});

  void Reset() override;
  bool Allocate(int64_t handle, int64_t bytes) override;
  void Free(int64_t handle) override;
  int64_t allocated_bytes() const override { return allocated_bytes_; }
  int64_t reserved_bytes() const override { return small_.mapped + large_.mapped; }
  std::string_view name() const override { return "expandable"; }

  int64_t RoundSize(int64_t bytes) const;

 private:
  struct Range {
    int64_t mapped = 0;                                  // bytes of pages mapped at [0, mapped)
    std::map<int64_t, std::pair<int64_t, bool>> blocks;  // offset -> (size, free), in address order
    std::set<std::pair<int64_t, int64_t>> free;          // (size, offset): best fit, lowest address
  };
  Range& RangeFor(bool small) { return small ? small_ : large_; }
  void Grow(Range& range, int64_t size, int64_t page);

  ExpandableAllocatorOptions options_;
  Range small_, large_;
  std::unordered_map<int64_t, std::pair<bool, int64_t>> block_by_handle_;  // (small, offset)
  int64_t allocated_bytes_ = 0;
};

}  // namespace memplan
