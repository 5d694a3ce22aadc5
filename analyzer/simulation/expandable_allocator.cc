#include "analyzer/simulation/expandable_allocator.h"

#include <iterator>

#include "graph/expected.h"

namespace memplan {

ExpandableAllocator::ExpandableAllocator(ExpandableAllocatorOptions options) : options_(options) {}

void ExpandableAllocator::Reset() {
  small_ = Range();
  large_ = Range();
  block_by_handle_.clear();
  allocated_bytes_ = 0;
}

int64_t ExpandableAllocator::RoundSize(int64_t bytes) const {
  const int64_t m = options_.min_block_size;
  if (bytes < m) return m;
  return m * ((bytes + m - 1) / m);
}

// Maps pages at the end of the range until a free block of at least `size` ends there: the last
// block grows when it is free, else a new free block starts at the old end.
void ExpandableAllocator::Grow(Range& range, int64_t size, int64_t page) {
  int64_t tail_offset = range.mapped;
  int64_t tail_size = 0;
  if (!range.blocks.empty()) {
    auto last = std::prev(range.blocks.end());
    if (last->second.second) {
      tail_offset = last->first;
      tail_size = last->second.first;
      range.free.erase({tail_size, tail_offset});
    }
  }
  const int64_t grow = page * ((size - tail_size + page - 1) / page);
  range.mapped += grow;
  range.blocks[tail_offset] = {tail_size + grow, true};
  range.free.insert({tail_size + grow, tail_offset});
}

bool ExpandableAllocator::Allocate(int64_t handle, int64_t bytes) {
  MEMPLAN_CHECK(bytes >= 0);
  MEMPLAN_CHECK(block_by_handle_.count(handle) == 0);
  const int64_t size = RoundSize(bytes);
  const bool small = size <= options_.small_size;
  Range& range = RangeFor(small);
  auto fit = range.free.lower_bound({size, -1});
  if (fit == range.free.end()) {
    Grow(range, size, small ? options_.small_page : options_.large_page);
    fit = range.free.lower_bound({size, -1});
    MEMPLAN_CHECK(fit != range.free.end()) << "grown range fits the request";
  }
  const auto [block_size, offset] = *fit;
  range.free.erase(fit);
  const int64_t remaining = block_size - size;
  int64_t used = block_size;
  if (remaining >= options_.min_block_size) {
    range.blocks[offset + size] = {remaining, true};
    range.free.insert({remaining, offset + size});
    used = size;
  }
  range.blocks[offset] = {used, false};
  allocated_bytes_ += used;
  block_by_handle_.emplace(handle, std::make_pair(small, offset));
  return true;
}

void ExpandableAllocator::Free(int64_t handle) {
  auto it = block_by_handle_.find(handle);
  MEMPLAN_CHECK(it != block_by_handle_.end());
  Range& range = RangeFor(it->second.first);
  auto pos = range.blocks.find(it->second.second);
  block_by_handle_.erase(it);
  MEMPLAN_CHECK(pos != range.blocks.end() && !pos->second.second);
  allocated_bytes_ -= pos->second.first;
  pos->second.second = true;
  // Merge with free neighbours (try_merge_blocks).
  auto next = std::next(pos);
  if (next != range.blocks.end() && next->second.second) {
    range.free.erase({next->second.first, next->first});
    pos->second.first += next->second.first;
    range.blocks.erase(next);
  }
  if (pos != range.blocks.begin()) {
    auto prev = std::prev(pos);
    if (prev->second.second) {
      range.free.erase({prev->second.first, prev->first});
      prev->second.first += pos->second.first;
      range.blocks.erase(pos);
      pos = prev;
    }
  }
  range.free.insert({pos->second.first, pos->first});
}

}  // namespace memplan
