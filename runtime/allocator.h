#pragma once
// Where every runtime buffer comes from. The executor passes its own (instrumented) allocator so
// measured memory can be compared with the simulator's prediction category by category.
//
// The CPU reference backend stores every element as a 32-bit float whatever the tensor's dtype
// (fp16/bf16 values are fp32 numbers rounded to the narrower format). A request therefore carries
// two sizes: the bytes the CPU buffer really needs, and the bytes the tensor would occupy on the
// device in its declared dtype, which is what counters report (2 bytes per fp16 element, 8 per
// int64 element), so the measurement speaks the simulator's units.

#include <array>
#include <cstddef>
#include <cstdint>
#include <unordered_map>

#include "analyzer/program/memory_category.h"
#include "analyzer/program/memory_stat.h"

namespace memplan {

struct AllocationRequest {
  size_t storage_bytes = 0;    // what the returned buffer must hold (float storage)
  size_t accounted_bytes = 0;  // what the buffer counts as (element count x device dtype size)
  MemoryCategory category = MemoryCategory::kOther;
};

class Allocator {
 public:
  virtual ~Allocator() = default;
  // Returns a buffer of at least request.storage_bytes bytes, aligned to kAlignment, never null
  // (an empty request still yields a unique pointer).
  virtual void* Allocate(const AllocationRequest& request) = 0;
  // REQUIRES: ptr came from Allocate on this allocator and was not freed yet.
  virtual void Free(void* ptr) = 0;
  // Moves a live buffer to another category (an output that turns out to be saved for backward
  // becomes an activation). Allocators that do not count ignore it.
  virtual void Recategorize(void* ptr, MemoryCategory category) {
    (void)ptr;
    (void)category;
  }

  static constexpr size_t kAlignment = 64;
};

// Plain heap storage, no bookkeeping: for constants and tests that do not measure memory.
Allocator& PlainCpuAllocator();

// Heap storage that counts live and peak accounted bytes per category and in total. The total
// peak is the peak of the sum (the number to compare with a simulated peak), not the sum of the
// per-category peaks.
class CountingCpuAllocator final : public Allocator {
 public:
  CountingCpuAllocator() = default;
  ~CountingCpuAllocator() override;
  CountingCpuAllocator(const CountingCpuAllocator&) = delete;
  CountingCpuAllocator& operator=(const CountingCpuAllocator&) = delete;

  void* Allocate(const AllocationRequest& request) override;
  void Free(void* ptr) override;
  void Recategorize(void* ptr, MemoryCategory category) override;

  CategoryBytes live_bytes() const;
  CategoryBytes peak_bytes() const;  // per category
  int64_t live_total() const { return total_.current; }
  int64_t peak_total() const { return total_.peak; }
  const MemoryStat& total() const { return total_; }
  int64_t num_allocations() const { return num_allocations_; }
  size_t num_live_buffers() const { return blocks_.size(); }
  // Starts a new measurement window: peaks drop to the current live bytes.
  void ResetPeaks();

 private:
  struct Block {
    size_t accounted_bytes;
    MemoryCategory category;
  };
  MemoryStat& stat(MemoryCategory category) { return by_category_[static_cast<size_t>(category)]; }

  std::unordered_map<void*, Block> blocks_;
  // The shared accounting primitive (analyzer/program/memory_stat.h), per category and in total.
  std::array<MemoryStat, kNumMemoryCategories> by_category_;
  MemoryStat total_;
  int64_t num_allocations_ = 0;
};

}  // namespace memplan
