#include "analyzer/caching_allocator.h"

#include "graph/expected.h"

namespace memplan {

CachingAllocator::CachingAllocator(CachingAllocatorOptions options) : options_(options) {}

void CachingAllocator::Reset() {
  blocks_.clear();
  free_block_slots_.clear();
  segments_.clear();
  live_segments_ = 0;
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

int64_t CachingAllocator::NewBlock(Block b) {
  if (!free_block_slots_.empty()) {
    int64_t index = free_block_slots_.back();
    free_block_slots_.pop_back();
    block(index) = b;
    return index;
  }
  blocks_.push_back(b);
  return static_cast<int64_t>(blocks_.size()) - 1;
}

void CachingAllocator::InsertFree(int64_t index) {
  const Block& b = block(index);
  auto& pool = segments_[static_cast<size_t>(b.segment)].small ? small_pool_ : large_pool_;
  pool.insert({b.size, b.segment, b.offset, index});
}

void CachingAllocator::EraseFree(int64_t index) {
  const Block& b = block(index);
  auto& pool = segments_[static_cast<size_t>(b.segment)].small ? small_pool_ : large_pool_;
  pool.erase({b.size, b.segment, b.offset, index});
}

std::optional<int64_t> CachingAllocator::FindFreeBlock(bool small, int64_t size) {
  auto& pool = small ? small_pool_ : large_pool_;
  // Best fit: the smallest block >= size, lowest address among equals (BlockComparator).
  auto it = pool.lower_bound({size, -1, -1, -1});
  if (it == pool.end()) return std::nullopt;
  return std::get<3>(*it);
}

std::optional<int64_t> CachingAllocator::NewSegment(bool small, int64_t segment_size) {
  if (options_.capacity && reserved_bytes_ + segment_size > *options_.capacity) {
    // alloc_block failed: release_cached_blocks() frees every unsplit free segment, then retry.
    ReleaseFreeSegments();
    if (reserved_bytes_ + segment_size > *options_.capacity) return std::nullopt;
  }
  const auto id = static_cast<int64_t>(segments_.size());
  int64_t head = NewBlock(Block{id, 0, segment_size, -1, -1, true});
  segments_.push_back(Segment{segment_size, head, small, false});
  ++live_segments_;
  reserved_bytes_ += segment_size;
  return head;
}

void CachingAllocator::ReleaseFreeSegments() {
  for (Segment& segment : segments_) {
    if (segment.released) continue;
    const Block& head = block(segment.head);
    if (head.next == -1 && head.free) {
      EraseFree(segment.head);
      free_block_slots_.push_back(segment.head);
      reserved_bytes_ -= segment.size;
      segment.released = true;
      segment.head = -1;
      --live_segments_;
    }
  }
}

bool CachingAllocator::Allocate(int64_t handle, int64_t bytes) {
  MEMPLAN_CHECK(bytes >= 0 && handle >= 0);
  const auto slot = static_cast<size_t>(handle);
  if (slot >= block_by_handle_.size()) block_by_handle_.resize(slot + 1, -1);
  MEMPLAN_CHECK(block_by_handle_[slot] == -1);
  const int64_t size = RoundSize(bytes);
  const bool small = size <= options_.small_size;
  std::optional<int64_t> found = FindFreeBlock(small, size);
  if (found) {
    EraseFree(*found);
  } else {
    found = NewSegment(small, SegmentSize(size));
    if (!found) return false;
  }
  const int64_t index = *found;
  const Block b = block(index);
  const int64_t remaining = b.size - size;
  // should_split(): small pool keeps remainders of >= 512 bytes, large pool only those > 1 MiB.
  const bool split = small ? remaining >= options_.min_block_size : remaining > options_.small_size;
  if (split) {
    const int64_t rest =
        NewBlock(Block{b.segment, b.offset + size, remaining, index, b.next, true});
    if (b.next != -1) block(b.next).prev = rest;
    block(index).next = rest;
    InsertFree(rest);
    block(index).size = size;
  }
  block(index).free = false;
  allocated_bytes_ += block(index).size;
  block_by_handle_[slot] = index;
  return true;
}

void CachingAllocator::Free(int64_t handle) {
  MEMPLAN_CHECK(handle >= 0 && static_cast<size_t>(handle) < block_by_handle_.size());
  const auto slot = static_cast<size_t>(handle);
  int64_t index = block_by_handle_[slot];
  MEMPLAN_CHECK(index != -1);
  block_by_handle_[slot] = -1;
  allocated_bytes_ -= block(index).size;
  block(index).free = true;
  // try_merge_blocks(): absorb free neighbours of the same segment.
  const int64_t next = block(index).next;
  if (next != -1 && block(next).free) {
    EraseFree(next);
    block(index).size += block(next).size;
    block(index).next = block(next).next;
    if (block(next).next != -1) block(block(next).next).prev = index;
    free_block_slots_.push_back(next);
  }
  const int64_t prev = block(index).prev;
  if (prev != -1 && block(prev).free) {
    EraseFree(prev);
    block(prev).size += block(index).size;
    block(prev).next = block(index).next;
    if (block(index).next != -1) block(block(index).next).prev = prev;
    free_block_slots_.push_back(index);
    index = prev;
  }
  InsertFree(index);
}

}  // namespace memplan
