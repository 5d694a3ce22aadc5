#include "analyzer/caching_allocator.h"

#include "graph/expected.h"

namespace memplan {

CachingAllocator::CachingAllocator(CachingAllocatorOptions options) : options_(options) {}

void CachingAllocator::Reset() {
  blocks_.clear();
  free_block_slots_.clear();
  segments_.clear();
  next_segment_ = 0;
  small_pool_.clear();
  large_pool_.clear();
  block_by_handle_.clear();
  allocated_bytes_ = 0;
  reserved_bytes_ = 0;
}

// round_size(): at least kMinBlockSize, then a multiple of it.
int64_t CachingAllocator::RoundSize(int64_t bytes) const {
  const int64_t m = options_.min_block_size;
  if (bytes < m) return m;
  return m * ((bytes + m - 1) / m);
}

// get_allocation_size(): the cudaMalloc size for a request that found no cached block.
int64_t CachingAllocator::SegmentSize(int64_t rounded) const {
  if (rounded <= options_.small_size) return options_.small_buffer;
  if (rounded < options_.min_large_alloc) return options_.large_buffer;
  const int64_t r = options_.round_large;
  return r * ((rounded + r - 1) / r);
}

int64_t CachingAllocator::NewBlock(Block block) {
  if (!free_block_slots_.empty()) {
    int64_t index = free_block_slots_.back();
    free_block_slots_.pop_back();
    blocks_[static_cast<size_t>(index)] = block;
    return index;
  }
  blocks_.push_back(block);
  return static_cast<int64_t>(blocks_.size()) - 1;
}

void CachingAllocator::InsertFree(int64_t index) {
  const Block& b = blocks_[static_cast<size_t>(index)];
  auto& pool = segments_.at(b.segment).small ? small_pool_ : large_pool_;
  pool.insert({b.size, b.segment, b.offset});
}

void CachingAllocator::EraseFree(int64_t index) {
  const Block& b = blocks_[static_cast<size_t>(index)];
  auto& pool = segments_.at(b.segment).small ? small_pool_ : large_pool_;
  pool.erase({b.size, b.segment, b.offset});
}

std::optional<int64_t> CachingAllocator::FindFreeBlock(bool small, int64_t size) {
  auto& pool = small ? small_pool_ : large_pool_;
  // Best fit: the smallest block >= size, lowest address among equals (BlockComparator).
  auto it = pool.lower_bound({size, -1, -1});
  if (it == pool.end()) return std::nullopt;
  auto [block_size, segment, offset] = *it;
  return segments_.at(segment).blocks.at(offset);
}

std::optional<int64_t> CachingAllocator::NewSegment(bool small, int64_t segment_size) {
  if (options_.capacity && reserved_bytes_ + segment_size > *options_.capacity) {
    // alloc_block failed: release_cached_blocks() frees every unsplit free segment, then retry.
    ReleaseFreeSegments();
    if (reserved_bytes_ + segment_size > *options_.capacity) return std::nullopt;
  }
  int64_t id = next_segment_++;
  Segment& segment = segments_[id];
  segment.size = segment_size;
  segment.small = small;
  int64_t block = NewBlock(Block{id, 0, segment_size, true});
  segment.blocks.emplace(0, block);
  reserved_bytes_ += segment_size;
  return block;
}

void CachingAllocator::ReleaseFreeSegments() {
  for (auto it = segments_.begin(); it != segments_.end();) {
    Segment& segment = it->second;
    if (segment.blocks.size() == 1 &&
        blocks_[static_cast<size_t>(segment.blocks.begin()->second)].free) {
      int64_t block = segment.blocks.begin()->second;
      EraseFree(block);
      free_block_slots_.push_back(block);
      reserved_bytes_ -= segment.size;
      it = segments_.erase(it);
    } else {
      ++it;
    }
  }
}

bool CachingAllocator::Allocate(int64_t handle, int64_t bytes) {
  MEMPLAN_CHECK(bytes >= 0);
  MEMPLAN_CHECK(block_by_handle_.count(handle) == 0);
  const int64_t size = RoundSize(bytes);
  const bool small = size <= options_.small_size;
  std::optional<int64_t> found = FindFreeBlock(small, size);
  if (found) {
    EraseFree(*found);
  } else {
    found = NewSegment(small, SegmentSize(size));
    if (!found) return false;
  }
  int64_t index = *found;
  Block block = blocks_[static_cast<size_t>(index)];
  const int64_t remaining = block.size - size;
  // should_split(): small pool keeps remainders of >= 512 bytes, large pool only those > 1 MiB.
  const bool split = small ? remaining >= options_.min_block_size : remaining > options_.small_size;
  if (split) {
    int64_t rest = NewBlock(Block{block.segment, block.offset + size, remaining, true});
    segments_.at(block.segment).blocks.emplace(block.offset + size, rest);
    InsertFree(rest);
    blocks_[static_cast<size_t>(index)].size = size;
  }
  blocks_[static_cast<size_t>(index)].free = false;
  allocated_bytes_ += blocks_[static_cast<size_t>(index)].size;
  block_by_handle_.emplace(handle, index);
  return true;
}

void CachingAllocator::Free(int64_t handle) {
  auto it = block_by_handle_.find(handle);
  MEMPLAN_CHECK(it != block_by_handle_.end());
  int64_t index = it->second;
  block_by_handle_.erase(it);
  Block& block = blocks_[static_cast<size_t>(index)];
  allocated_bytes_ -= block.size;
  block.free = true;
  // try_merge_blocks(): absorb free neighbours of the same segment.
  Segment& segment = segments_.at(block.segment);
  auto pos = segment.blocks.find(block.offset);
  auto next = std::next(pos);
  if (next != segment.blocks.end() && blocks_[static_cast<size_t>(next->second)].free) {
    int64_t n = next->second;
    EraseFree(n);
    blocks_[static_cast<size_t>(index)].size += blocks_[static_cast<size_t>(n)].size;
    segment.blocks.erase(next);
    free_block_slots_.push_back(n);
  }
  if (pos != segment.blocks.begin()) {
    auto prev = std::prev(pos);
    int64_t p = prev->second;
    if (blocks_[static_cast<size_t>(p)].free) {
      EraseFree(p);
      blocks_[static_cast<size_t>(p)].size += blocks_[static_cast<size_t>(index)].size;
      segment.blocks.erase(pos);
      free_block_slots_.push_back(index);
      index = p;
    }
  }
  InsertFree(index);
}

}  // namespace memplan
