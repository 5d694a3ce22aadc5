#pragma once
// A model of PyTorch's CUDA caching allocator (c10/cuda/CUDACachingAllocator.cpp; by default
// its default configuration, and PYTORCH_CUDA_ALLOC_CONF's max_split_size_mb and
// roundup_power2_divisions when set: see CachingAllocatorOptions; expandable segments are
// analyzer/simulation/expandable_allocator.h, garbage collection is not modelled):
//  * round_size: requests are rounded up to a multiple of 512 bytes (kMinBlockSize), minimum 512;
//  * rounded sizes <= 1 MiB (kSmallSize) use the small pool, larger ones the large pool;
//  * get_allocation_size: a new segment is 2 MiB (kSmallBuffer) for small requests, 20 MiB
//    (kLargeBuffer) for requests below 10 MiB (kMinLargeAlloc), else the request rounded up to a
//    multiple of 2 MiB (kRoundLarge);
//  * get_free_block: best fit, the smallest free block of the pool that is large enough (ties: the
//    lowest address), before any new segment;
//  * should_split: a small-pool block is split when >= 512 bytes remain; a large-pool block only
//    when more than 1 MiB remains (otherwise the whole block is handed out and counts as
//    allocated);
//  * free: the block returns to its pool and merges with free neighbours of its segment;
//    segments are never released (reserved only grows), except on out-of-memory:
//  * with a capacity, a segment that would exceed it first releases every fully free cached
//    segment (release_cached_blocks) and retries; if it still does not fit, Allocate fails.

#include <cstdint>
#include <optional>
#include <vector>

#include "analyzer/program/allocator_model.h"

namespace memplan {

struct CachingAllocatorOptions {
  int64_t min_block_size = 512;        // kMinBlockSize
  int64_t small_size = 1 << 20;        // kSmallSize: small-pool threshold, 1 MiB
  int64_t small_buffer = 2 << 20;      // kSmallBuffer: small segment, 2 MiB
  int64_t large_buffer = 20 << 20;     // kLargeBuffer: segment for 1-10 MiB, 20 MiB
  int64_t min_large_alloc = 10 << 20;  // kMinLargeAlloc: 10 MiB
  int64_t round_large = 2 << 20;       // kRoundLarge: large segment rounding, 2 MiB
  std::optional<int64_t> capacity;     // device bytes; nullopt = unlimited
  // PYTORCH_CUDA_ALLOC_CONF max_split_size_mb (in bytes; PyTorch requires more than 20 MiB).
  // Blocks of at least this size are "oversize": never split (should_split), never handed to a
  // request below it, and handed to a request at or above it only when less than kLargeBuffer
  // (20 MiB) larger (get_free_block). INT64_MAX: unset, PyTorch's default.
  int64_t max_split_size = INT64_MAX;
  // PYTORCH_CUDA_ALLOC_CONF roundup_power2_divisions (one value for every size): a request above
  // 512 B x divisions is rounded up to the next of `divisions` equal steps between the powers
  // of two around it (roundup_power2_next_division); 0 or 1: off, PyTorch's default.
  int64_t roundup_power2_divisions = 0;
};

class CachingAllocator final : public AllocatorModel {
 public:
  explicit CachingAllocator(CachingAllocatorOptions options = {});

  void Reset() override;
  // REQUIRES: handle >= 0 (handles index a table: the simulator passes BufferId indices).
  bool Allocate(int64_t handle, int64_t bytes) override;
  void Free(int64_t handle) override;
  int64_t allocated_bytes() const override { return allocated_bytes_; }
  int64_t reserved_bytes() const override { return reserved_bytes_; }
  std::string_view name() const override { return "caching"; }

  int64_t num_segments() const { return live_segments_; }
  // torch.cuda.empty_cache() (release_cached_blocks): every segment whose blocks are all free
  // goes back to the device. Returns the bytes released. `memplan replay` calls it where a
  // snapshot's trace shows a run of segment_free events.
  int64_t ReleaseCachedSegments();
  // The sizes of the segments the model holds, in the order they were made.
  std::vector<int64_t> SegmentSizes() const;
  // The rounding rules, exposed for tests and reports. RoundSize is round_size(): at least
  // kMinBlockSize, then a multiple of it (inline: the peak memo rounds every buffer per probe).
  int64_t RoundSize(int64_t bytes) const {
    const int64_t m = options_.min_block_size;
    if (bytes < m) return m;
    const int64_t divisions = options_.roundup_power2_divisions;
    if (divisions > 1 && bytes > m * divisions) return RoundUpPowerOf2Division(bytes);
    if (round_mask_ != 0 || m == 1) return (bytes + round_mask_) & ~round_mask_;
    return m * ((bytes + m - 1) / m);
  }
  int64_t SegmentSize(int64_t rounded) const;
  // roundup_power2_next_division(bytes, divisions): a power of two stays; else the step of
  // floor_pow2(bytes) / 2^floor(log2(divisions)) at or above `bytes`.
  int64_t RoundUpPowerOf2Division(int64_t bytes) const;

 private:
  // Blocks of a segment form a doubly linked list in address order (PyTorch's Block::prev/next),
  // so a free merges with its neighbours in O(1).
  //
  // Addresses: PyTorch orders free blocks of one size by device pointer; the model orders them
  // by (segment, offset), segments by creation. Each segment gets a virtual base, the sum of the
  // sizes of the segments made before it (never reused), so base + offset is one integer in that
  // same order: heap entries compare one word instead of two.
  struct Block {
    int64_t address = 0;  // the segment's virtual base + the block's offset in it
    int64_t size = 0;
    int64_t stamp = -1;  // the stamp of its entry in its pool's heap; -1 when not in a pool
    int32_t segment = 0;
    int32_t prev = -1;  // the block at the next lower address of the segment; -1 none
    int32_t next = -1;  // the block at the next higher address; -1 none
    bool free = true;
    bool small = false;  // its segment's pool (read on every free: kept beside the block)
  };
  struct Segment {
    int64_t size = 0;
    int64_t head = -1;      // the block at offset 0
    bool released = false;  // given back by ReleaseFreeSegments
  };
  // The free blocks of a pool in PyTorch's BlockComparator order: size, then address. Every
  // simulated allocation takes a block out and puts its remainder back, and a balanced tree of
  // all free blocks (a node per block, a cache miss per level) was most of the model's cost.
  // Programs have few distinct sizes (under a hundred free at once on a 50,000-node chain) and
  // many blocks of some, so a pool is a sorted array of the sizes with a free block, each with a
  // bucket, and a bucket a binary min-heap by address in one array. A block leaves the pool by
  // losing its stamp (Block::stamp); its heap entry stays behind, is skipped when it reaches the
  // top, and is dropped when stale entries outnumber live ones.
  struct FreeEntry {
    int64_t address = 0;
    int64_t block = 0;
    int64_t stamp = 0;  // live while block(block).stamp == stamp
  };
  // A bucket's entries: the lowest address is taken first. Blocks mostly come back in the
  // reverse of the order they were taken (backward frees activations last to first), so each
  // returning block is its bucket's new lowest: a heap alone sifts each of them from the bottom
  // to the top and each take from the top to the bottom. Such entries go on `run` instead, a
  // stack of descending addresses where both are O(1); an entry that is not below the run's
  // last goes to `heap`. The lowest address is the lower of the two tops. (The 50,000-node
  // chain's replays: 10% fewer instructions than with a heap alone.)
  struct SizeBucket {
    std::vector<FreeEntry> run;   // descending by address: the lowest at the back
    std::vector<FreeEntry> heap;  // min-heap by address: the rest
    int64_t live = 0;             // blocks of this size in the pool
  };
  // The sizes are searched on every request: a flat array of them (one or two cache lines) beats
  // a tree, and a bucket that empties and refills (a size nothing else has free, as a chain's
  // activations) keeps its heap array in `buckets_` instead of going back to malloc.
  struct SizeSlot {
    int64_t size = 0;
    uint32_t bucket = 0;  // buckets_[bucket]
  };
  // The small pool's sizes are multiples of the block size up to its 2 MiB segments (4,096
  // sizes), so it indexes its buckets by size class, with a bitmap of the classes that have a
  // free block. A size's bucket is then one load and the best fit a find-next-set-bit, where the
  // sorted array was scanned on every request and moved its tail for every size it gained or
  // lost: most small free blocks are one-off split remainders, and replays of the 50,000-node
  // chain made a bucket on 44% of their requests and dropped one on 60% (callgrind). By class,
  // the replays run 18% fewer instructions. The large pool's sizes are unbounded: a sorted array.
  struct FreePool {
    std::vector<SizeSlot> sizes;  // ascending; a size is here while a block of it is free
    // By class (size >> class_shift), when `by_class`: class_buckets[c] is class c's bucket
    // (kept for the run, its heap's capacity too), bit c of `occupied` says it has a free
    // block, and bit w of `occupied_words` that occupied[w] has a bit set, so the next class
    // up is found in two steps whatever the distance.
    bool by_class = false;
    std::vector<SizeBucket> class_buckets;
    std::vector<uint64_t> occupied;
    std::vector<uint64_t> occupied_words;
  };

  // The hot paths return a block index or kNoBlock rather than std::optional: an optional built
  // on the stack and read back as one word stalls store forwarding, and replays call these
  // tens of millions of times per plan.
  static constexpr int64_t kNoBlock = -1;
  // Takes the best-fitting free block out of its pool: the smallest block of at least `size`,
  // the lowest address among equals; kNoBlock when none is large enough.
  // `below`: the block must be smaller than this (get_free_block's oversize rules), else none is
  // taken even when a larger one is free: PyTorch looks at the best fit only.
  int64_t TakeFreeBlock(bool small, int64_t size, int64_t below = INT64_MAX);
  FreePool& PoolOf(const Block& b) { return b.small ? small_pool_ : large_pool_; }
  bool Stale(const FreeEntry& e) { return block(e.block).stamp != e.stamp; }
  // Drops the stale entries of a bucket once they outnumber the live ones.
  void Compact(SizeBucket& bucket);
  // The head block of a new segment; kNoBlock when the capacity refuses it.
  int64_t NewSegment(bool small, int64_t segment_size);
  void ReleaseFreeSegments();
  void InsertFree(int64_t block);
  void EraseFree(int64_t block);
  // try_merge_blocks(): the block at `index` takes in the one after it in its segment, whose slot
  // becomes a spare. REQUIRES: neither is in a pool (the caller erased the one that was).
  void AbsorbNext(int64_t index);
  // The position of the first size >= `size` in `pool` (pool.sizes.size() when none).
  static size_t FirstAtLeast(const FreePool& pool, int64_t size);
  // A by_class pool's first class >= `size`'s class with a bucket; -1 when none.
  int64_t FirstClassAtLeast(const FreePool& pool, int64_t size) const;
  // The bucket of `size` in `pool`, made (from a spare slot when one is left) when absent.
  SizeBucket& BucketOf(FreePool& pool, int64_t size) {
    return pool.by_class ? ClassBucketOf(pool, size) : SortedBucketOf(pool, size);
  }
  SizeBucket& ClassBucketOf(FreePool& pool, int64_t size);
  SizeBucket& SortedBucketOf(FreePool& pool, int64_t size);
  // Removes the emptied bucket at `position` of `pool`; its slot becomes a spare.
  void DropBucket(FreePool& pool, size_t position);
  // The same for a by_class pool's class: empties its bucket and clears its bits.
  static void DropClass(FreePool& pool, int64_t size_class);
  // A free block, its fields written in place (a Block built on the stack and copied stalls
  // store forwarding on its `free` byte).
  int64_t NewBlock(int64_t segment, int64_t address, int64_t size, int64_t prev, int64_t next,
                   bool small);
  Block& block(int64_t index) { return blocks_[static_cast<size_t>(index)]; }

  CachingAllocatorOptions options_;
  // min_block_size - 1 when it is a power of two (always, in PyTorch's configuration): rounding
  // by a mask instead of a division, on every request of every replay.
  int64_t round_mask_ = 0;
  int class_shift_ = 0;  // log2(min_block_size), for a by_class pool
  std::vector<Block> blocks_;
  std::vector<int64_t> free_block_slots_;  // recycled indices into blocks_
  std::vector<Segment> segments_;          // by segment id (ids are never reused)
  int64_t live_segments_ = 0;              // segments not released
  int64_t next_segment_base_ = 0;          // the virtual base of the next segment
  FreePool small_pool_, large_pool_;
  std::vector<SizeBucket> buckets_;    // by slot: the pools' buckets and the spares
  std::vector<uint32_t> spare_slots_;  // slots of buckets_ no pool uses (emptied, capacity kept)
  int64_t last_stamp_ = 0;
  std::vector<int64_t> block_by_handle_;  // by handle: the live block, -1 none
  int64_t allocated_bytes_ = 0;
  int64_t reserved_bytes_ = 0;
};

}  // namespace memplan
