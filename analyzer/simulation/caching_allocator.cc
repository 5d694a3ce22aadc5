#include "analyzer/simulation/caching_allocator.h"

#include <algorithm>
#include <bit>

#include "graph/expected.h"

namespace memplan {

CachingAllocator::CachingAllocator(CachingAllocatorOptions options) : options_(options) {
  const int64_t m = options_.min_block_size;
  MEMPLAN_CHECK(m >= 1);
  if ((m & (m - 1)) == 0) round_mask_ = m - 1;
  // The small pool by class when its blocks (requests up to small_size, free blocks up to a
  // whole small_buffer segment) are multiples of a power-of-two block size (rounded requests
  // are, and so are remainders of a segment that is one) in few enough classes (PyTorch's:
  // 512 B up to 2 MiB, 4,097 classes).
  const int64_t largest = std::max(options_.small_size, options_.small_buffer);
  if (round_mask_ != 0 && options_.small_buffer % m == 0 && largest / m < (int64_t{1} << 20)) {
    while ((int64_t{1} << class_shift_) < m) ++class_shift_;
    const auto classes = static_cast<size_t>((largest >> class_shift_) + 1);
    const size_t words = (classes + 63) / 64;
    small_pool_.by_class = true;
    small_pool_.class_buckets.resize(classes);
    small_pool_.occupied.assign(words, 0);
    small_pool_.occupied_words.assign((words + 63) / 64, 0);
  }
}

void CachingAllocator::Reset() {
  blocks_.clear();
  free_block_slots_.clear();
  segments_.clear();
  live_segments_ = 0;
  next_segment_base_ = 0;
  for (FreePool* pool : {&small_pool_, &large_pool_}) {
    while (!pool->sizes.empty()) DropBucket(*pool, pool->sizes.size() - 1);
    for (size_t w = 0; w < pool->occupied.size(); ++w)
      while (pool->occupied[w] != 0)
        DropClass(*pool, static_cast<int64_t>(w * 64 + std::countr_zero(pool->occupied[w])));
  }
  last_stamp_ = 0;
  block_by_handle_.clear();
  allocated_bytes_ = 0;
  reserved_bytes_ = 0;
}

// get_allocation_size(): the cudaMalloc size for a request that found no cached block.
int64_t CachingAllocator::SegmentSize(int64_t rounded) const {
  if (rounded <= options_.small_size) return options_.small_buffer;
  if (rounded < options_.min_large_alloc) return options_.large_buffer;
  const int64_t r = options_.round_large;
  return r * ((rounded + r - 1) / r);
}

int64_t CachingAllocator::RoundUpPowerOf2Division(int64_t bytes) const {
  const auto size = static_cast<uint64_t>(bytes);
  if (std::has_single_bit(size)) return bytes;
  const uint64_t floor = std::bit_floor(size);
  const auto divisions = static_cast<uint64_t>(options_.roundup_power2_divisions);
  // power2_floor >> (63 - countLeadingZeros(divisions)): divisions rounded down to a power of 2.
  const uint64_t step = floor >> (63 - std::countl_zero(divisions));
  if (step == 0) return static_cast<int64_t>(floor << 1);
  const uint64_t down = size & ~(step - 1);
  return static_cast<int64_t>(down == size ? size : down + step);
}

int64_t CachingAllocator::NewBlock(int64_t segment, int64_t address, int64_t size, int64_t prev,
                                   int64_t next, bool small) {
  int64_t index = 0;
  if (!free_block_slots_.empty()) {
    index = free_block_slots_.back();
    free_block_slots_.pop_back();
  } else {
    index = static_cast<int64_t>(blocks_.size());
    MEMPLAN_CHECK(index < INT32_MAX);  // Block links are 32-bit
    blocks_.emplace_back();
  }
  Block& b = block(index);
  b.address = address;
  b.size = size;
  b.stamp = -1;
  b.segment = static_cast<int32_t>(segment);
  b.prev = static_cast<int32_t>(prev);
  b.next = static_cast<int32_t>(next);
  b.free = true;
  b.small = small;
  return index;
}

namespace {

// The heap order of a bucket: std::push_heap keeps the greatest on top, so "greater" puts the
// lowest address there.
struct HigherAddress {
  template <class Entry>
  bool operator()(const Entry& a, const Entry& b) const {
    return a.address > b.address;
  }
};

}  // namespace

void CachingAllocator::Compact(SizeBucket& bucket) {
  constexpr size_t kSlack = 16;  // stale entries tolerated on top of the live count
  if (bucket.run.size() + bucket.heap.size() <= 2 * static_cast<size_t>(bucket.live) + kSlack)
    return;
  const auto stale = [this](const FreeEntry& e) { return Stale(e); };
  std::erase_if(bucket.run, stale);  // keeps the run's order
  std::erase_if(bucket.heap, stale);
  std::make_heap(bucket.heap.begin(), bucket.heap.end(), HigherAddress{});
}

size_t CachingAllocator::FirstAtLeast(const FreePool& pool, int64_t size) {
  // A pool rarely holds more than a few dozen sizes: scanned in order, the loop's branch is
  // predicted until the exit, where a binary search mispredicts at every level (a fifth of the
  // model's time on a 50,000-node chain).
  constexpr size_t kScanned = 32;
  if (pool.sizes.size() <= kScanned) {
    size_t i = 0;
    while (i < pool.sizes.size() && pool.sizes[i].size < size) ++i;
    return i;
  }
  return static_cast<size_t>(
      std::lower_bound(pool.sizes.begin(), pool.sizes.end(), size,
                       [](const SizeSlot& slot, int64_t value) { return slot.size < value; }) -
      pool.sizes.begin());
}

int64_t CachingAllocator::FirstClassAtLeast(const FreePool& pool, int64_t size) const {
  const int64_t size_class = size >> class_shift_;
  auto word = static_cast<size_t>(size_class >> 6);
  if (word >= pool.occupied.size()) return -1;
  const uint64_t bits = pool.occupied[word] & (~uint64_t{0} << (size_class & 63));
  if (bits != 0) return static_cast<int64_t>(word * 64) + std::countr_zero(bits);
  // The next word with a bit set, by the summary.
  size_t next = word + 1;
  if (next >= pool.occupied.size()) return -1;
  size_t summary = next >> 6;
  uint64_t words = pool.occupied_words[summary] & (~uint64_t{0} << (next & 63));
  while (words == 0) {
    if (++summary == pool.occupied_words.size()) return -1;
    words = pool.occupied_words[summary];
  }
  next = summary * 64 + static_cast<size_t>(std::countr_zero(words));
  return static_cast<int64_t>(next * 64) + std::countr_zero(pool.occupied[next]);
}

CachingAllocator::SizeBucket& CachingAllocator::ClassBucketOf(FreePool& pool, int64_t size) {
  const int64_t c = size >> class_shift_;
  MEMPLAN_CHECK(static_cast<size_t>(c) < pool.class_buckets.size());
  const auto word = static_cast<size_t>(c >> 6);
  pool.occupied[word] |= uint64_t{1} << (c & 63);
  pool.occupied_words[word >> 6] |= uint64_t{1} << (word & 63);
  return pool.class_buckets[static_cast<size_t>(c)];
}

CachingAllocator::SizeBucket& CachingAllocator::SortedBucketOf(FreePool& pool, int64_t size) {
  const size_t i = FirstAtLeast(pool, size);
  if (i < pool.sizes.size() && pool.sizes[i].size == size) return buckets_[pool.sizes[i].bucket];
  uint32_t slot = 0;
  if (spare_slots_.empty()) {
    MEMPLAN_CHECK(buckets_.size() < UINT32_MAX);
    slot = static_cast<uint32_t>(buckets_.size());
    buckets_.emplace_back();
  } else {
    slot = spare_slots_.back();
    spare_slots_.pop_back();
  }
  pool.sizes.insert(pool.sizes.begin() + static_cast<std::ptrdiff_t>(i), SizeSlot{size, slot});
  return buckets_[slot];
}

void CachingAllocator::DropBucket(FreePool& pool, size_t position) {
  const uint32_t slot = pool.sizes[position].bucket;
  buckets_[slot].run.clear();
  buckets_[slot].heap.clear();
  buckets_[slot].live = 0;
  spare_slots_.push_back(slot);
  pool.sizes.erase(pool.sizes.begin() + static_cast<std::ptrdiff_t>(position));
}

void CachingAllocator::DropClass(FreePool& pool, int64_t size_class) {
  SizeBucket& bucket = pool.class_buckets[static_cast<size_t>(size_class)];
  bucket.run.clear();
  bucket.heap.clear();
  bucket.live = 0;
  const auto word = static_cast<size_t>(size_class >> 6);
  pool.occupied[word] &= ~(uint64_t{1} << (size_class & 63));
  if (pool.occupied[word] == 0) pool.occupied_words[word >> 6] &= ~(uint64_t{1} << (word & 63));
}

void CachingAllocator::InsertFree(int64_t index) {
  Block& b = block(index);
  SizeBucket& bucket = BucketOf(PoolOf(b), b.size);
  b.stamp = ++last_stamp_;
  if (bucket.run.empty() || b.address < bucket.run.back().address) {
    bucket.run.push_back(FreeEntry{b.address, index, b.stamp});
  } else {
    bucket.heap.push_back(FreeEntry{b.address, index, b.stamp});
    std::push_heap(bucket.heap.begin(), bucket.heap.end(), HigherAddress{});
  }
  ++bucket.live;
  Compact(bucket);
}

void CachingAllocator::EraseFree(int64_t index) {
  Block& b = block(index);
  MEMPLAN_CHECK(b.stamp != -1);
  b.stamp = -1;
  FreePool& pool = PoolOf(b);
  if (pool.by_class) {
    const int64_t c = b.size >> class_shift_;
    MEMPLAN_CHECK(static_cast<size_t>(c) < pool.class_buckets.size() &&
                  (pool.occupied[static_cast<size_t>(c >> 6)] >> (c & 63) & 1) != 0);
    SizeBucket& bucket = pool.class_buckets[static_cast<size_t>(c)];
    MEMPLAN_CHECK(bucket.live > 0);
    if (--bucket.live == 0) {
      DropClass(pool, c);
    } else {
      Compact(bucket);
    }
    return;
  }
  const size_t i = FirstAtLeast(pool, b.size);
  MEMPLAN_CHECK(i < pool.sizes.size() && pool.sizes[i].size == b.size);
  SizeBucket& bucket = buckets_[pool.sizes[i].bucket];
  MEMPLAN_CHECK(bucket.live > 0);
  if (--bucket.live == 0) {
    DropBucket(pool, i);
  } else {
    Compact(bucket);
  }
}

int64_t CachingAllocator::TakeFreeBlock(bool small, int64_t size, int64_t below) {
  FreePool& pool = small ? small_pool_ : large_pool_;
  // Best fit: the smallest size >= size (every bucket in the pool has a live block), then the
  // lowest address of that size (BlockComparator).
  size_t i = 0;
  int64_t size_class = -1;
  SizeBucket* found = nullptr;
  if (pool.by_class) {
    size_class = FirstClassAtLeast(pool, size);
    if (size_class < 0 || (size_class << class_shift_) >= below) return kNoBlock;
    found = &pool.class_buckets[static_cast<size_t>(size_class)];
  } else {
    i = FirstAtLeast(pool, size);
    if (i == pool.sizes.size() || pool.sizes[i].size >= below) return kNoBlock;
    found = &buckets_[pool.sizes[i].bucket];
  }
  SizeBucket& bucket = *found;
  std::vector<FreeEntry>& run = bucket.run;
  std::vector<FreeEntry>& heap = bucket.heap;
  for (;;) {
    MEMPLAN_CHECK(!run.empty() || !heap.empty());
    // Two fields read in place: a copy of the entry through the stack stalls store forwarding.
    int64_t taken = 0;
    int64_t stamp = 0;
    if (!run.empty() && (heap.empty() || run.back().address < heap.front().address)) {
      taken = run.back().block;
      stamp = run.back().stamp;
      run.pop_back();
    } else {
      std::pop_heap(heap.begin(), heap.end(), HigherAddress{});
      taken = heap.back().block;
      stamp = heap.back().stamp;
      heap.pop_back();
    }
    if (block(taken).stamp != stamp) continue;  // stale: the block left the pool
    block(taken).stamp = -1;
    if (--bucket.live == 0) {
      if (pool.by_class) {
        DropClass(pool, size_class);
      } else {
        DropBucket(pool, i);
      }
    }
    return taken;
  }
}

int64_t CachingAllocator::NewSegment(bool small, int64_t segment_size) {
  if (options_.capacity && reserved_bytes_ + segment_size > *options_.capacity) {
    // alloc_block failed: release_cached_blocks() frees every unsplit free segment, then retry.
    ReleaseFreeSegments();
    if (reserved_bytes_ + segment_size > *options_.capacity) return kNoBlock;
  }
  const auto id = static_cast<int64_t>(segments_.size());
  MEMPLAN_CHECK(id < INT32_MAX);  // Block::segment is 32-bit
  // Bases count released segments too, so they can outgrow reserved_bytes_ (bounded by the
  // program's 2^62 total) only under a capacity, by releasing and remaking segments: 2^63 bytes
  // of them is beyond any replay, and checked rather than left to wrap.
  MEMPLAN_CHECK(next_segment_base_ <= INT64_MAX - segment_size);
  int64_t head = NewBlock(id, next_segment_base_, segment_size, -1, -1, small);
  next_segment_base_ += segment_size;
  segments_.push_back(Segment{segment_size, head, false});
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

int64_t CachingAllocator::ReleaseCachedSegments() {
  const int64_t before = reserved_bytes_;
  ReleaseFreeSegments();
  return before - reserved_bytes_;
}

std::vector<int64_t> CachingAllocator::SegmentSizes() const {
  std::vector<int64_t> sizes;
  for (const Segment& segment : segments_)
    if (!segment.released) sizes.push_back(segment.size);
  return sizes;
}

bool CachingAllocator::Allocate(int64_t handle, int64_t bytes) {
  MEMPLAN_CHECK(bytes >= 0 && handle >= 0);
  const auto slot = static_cast<size_t>(handle);
  if (slot >= block_by_handle_.size()) block_by_handle_.resize(slot + 1, -1);
  MEMPLAN_CHECK(block_by_handle_[slot] == -1);
  const int64_t size = RoundSize(bytes);
  const bool small = size <= options_.small_size;
  // get_free_block with max_split_size: a request below it takes no oversize block; one at or
  // above it none kLargeBuffer or more larger than itself. (Small-pool blocks are at most 2 MiB,
  // below any max_split_size PyTorch accepts.)
  const int64_t max_split = options_.max_split_size;
  const int64_t below =
      small || max_split == INT64_MAX ? INT64_MAX
      : size < max_split
          ? max_split
          : (size > INT64_MAX - options_.large_buffer ? INT64_MAX : size + options_.large_buffer);
  int64_t index = TakeFreeBlock(small, size, below);
  if (index == kNoBlock) {
    index = NewSegment(small, SegmentSize(size));
    if (index == kNoBlock) return false;
  }
  const int64_t segment = block(index).segment;
  const int64_t address = block(index).address;
  const int64_t next = block(index).next;
  const int64_t remaining = block(index).size - size;
  // should_split(): small pool keeps remainders of >= 512 bytes, large pool only those > 1 MiB,
  // and never for a request of max_split_size or more (an oversize block stays whole).
  const bool split = small ? remaining >= options_.min_block_size
                           : size < max_split && remaining > options_.small_size;
  if (split) {
    const int64_t rest = NewBlock(segment, address + size, remaining, index, next, small);
    if (next != -1) block(next).prev = static_cast<int32_t>(rest);
    block(index).next = static_cast<int32_t>(rest);
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
    AbsorbNext(index);
  }
  const int64_t prev = block(index).prev;
  if (prev != -1 && block(prev).free) {
    EraseFree(prev);
    AbsorbNext(prev);
    index = prev;
  }
  InsertFree(index);
}

void CachingAllocator::AbsorbNext(int64_t index) {
  const int64_t next = block(index).next;
  block(index).size += block(next).size;
  block(index).next = block(next).next;
  if (block(next).next != -1) block(block(next).next).prev = static_cast<int32_t>(index);
  free_block_slots_.push_back(next);
}

}  // namespace memplan
