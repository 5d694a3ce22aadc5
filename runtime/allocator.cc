#include "runtime/allocator.h"

#include <algorithm>
#include <new>

#include "graph/expected.h"

namespace memplan {
namespace {

void* AlignedNew(size_t bytes) {
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
