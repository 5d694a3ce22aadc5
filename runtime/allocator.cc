#include "runtime/allocator.h"

#include <malloc.h>

#include <algorithm>
#include <new>

#include "graph/expected.h"

namespace memplan {
namespace {

// The CPU backend frees and allocates the same activation-sized blocks (up to tens of MB) every
// step. With glibc's defaults, once the heap top is trimmed (above 128 KiB free) or a block was
// served by mmap, the next step faults the same pages in again: about 0.3 s of system time of a
// 5 s ResNet-18 `verify` (docs/measurements.md). Serving blocks up to 32 MiB (the largest mmap
// threshold glibc accepts) from the heap and trimming only past 1 GiB keeps them in the process.
// Setting the trim threshold alone would be worse: it also freezes the mmap threshold at 128 KiB.
void KeepFreedHostBlocks() {
#ifdef __GLIBC__
  static const bool done = [] {
    mallopt(M_MMAP_THRESHOLD, 32 << 20);
    mallopt(M_TRIM_THRESHOLD, 1 << 30);
    return true;
  }();
  (void)done;
#endif
}

void* AlignedNew(size_t bytes) {
  KeepFreedHostBlocks();
  // A zero-byte request still gets a distinct pointer so Free can find it.
  return ::operator new (std::max<size_t>(bytes, 1), std::align_val_t{Allocator::kAlignment});
}

void AlignedDelete(void* ptr) { ::operator delete (ptr, std::align_val_t{Allocator::kAlignment}); }

class PlainAllocator final : public Allocator {
 public:
  void* Allocate(const AllocationRequest& request) override {
    return AlignedNew(request.storage_bytes);
  }
  void Free(void* ptr) override { AlignedDelete(ptr); }
};

}  // namespace

Allocator& PlainCpuAllocator() {
  static PlainAllocator allocator;
  return allocator;
}

CountingCpuAllocator::~CountingCpuAllocator() {
  // Tensors must not outlive their allocator; a live buffer here is a leak in the caller.
  MEMPLAN_CHECK(blocks_.empty());
}

void* CountingCpuAllocator::Allocate(const AllocationRequest& request) {
  void* ptr = AlignedNew(request.storage_bytes);
  blocks_.emplace(ptr, Block{request.accounted_bytes, request.category});
  ++num_allocations_;
  const auto bytes = static_cast<int64_t>(request.accounted_bytes);
  stat(request.category).Allocate(bytes);
  total_.Allocate(bytes);
  return ptr;
}

void CountingCpuAllocator::Free(void* ptr) {
  auto it = blocks_.find(ptr);
  MEMPLAN_CHECK(it != blocks_.end());
  const auto bytes = static_cast<int64_t>(it->second.accounted_bytes);
  stat(it->second.category).Free(bytes);
  total_.Free(bytes);
  blocks_.erase(it);
  AlignedDelete(ptr);
}

// The bytes move between categories; the total neither grows nor shrinks.
void CountingCpuAllocator::Recategorize(void* ptr, MemoryCategory category) {
  auto it = blocks_.find(ptr);
  MEMPLAN_CHECK(it != blocks_.end());
  const auto bytes = static_cast<int64_t>(it->second.accounted_bytes);
  stat(it->second.category).Free(bytes);
  it->second.category = category;
  stat(category).Allocate(bytes);
}

CategoryBytes CountingCpuAllocator::live_bytes() const {
  CategoryBytes out;
  for (size_t c = 0; c < kNumMemoryCategories; ++c) out.bytes[c] = by_category_[c].current;
  return out;
}

CategoryBytes CountingCpuAllocator::peak_bytes() const {
  CategoryBytes out;
  for (size_t c = 0; c < kNumMemoryCategories; ++c) out.bytes[c] = by_category_[c].peak;
  return out;
}

void CountingCpuAllocator::ResetPeaks() {
  for (MemoryStat& s : by_category_) s.ResetPeak();
  total_.ResetPeak();
}

}  // namespace memplan
