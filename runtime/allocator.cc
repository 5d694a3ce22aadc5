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
  Add(request.category, static_cast<int64_t>(request.accounted_bytes));
  return ptr;
}

void CountingCpuAllocator::Free(void* ptr) {
  auto it = blocks_.find(ptr);
  MEMPLAN_CHECK(it != blocks_.end());
  Add(it->second.category, -static_cast<int64_t>(it->second.accounted_bytes));
  blocks_.erase(it);
  AlignedDelete(ptr);
}

void CountingCpuAllocator::Recategorize(void* ptr, MemoryCategory category) {
  auto it = blocks_.find(ptr);
  MEMPLAN_CHECK(it != blocks_.end());
  const auto bytes = static_cast<int64_t>(it->second.accounted_bytes);
  Add(it->second.category, -bytes);
  it->second.category = category;
  Add(category, bytes);
}

void CountingCpuAllocator::ResetPeaks() {
  peak_ = live_;
  peak_total_ = live_total_;
}

void CountingCpuAllocator::Add(MemoryCategory category, int64_t bytes) {
  live_[category] += bytes;
  live_total_ += bytes;
  MEMPLAN_CHECK(live_[category] >= 0 && live_total_ >= 0);
  peak_[category] = std::max(peak_[category], live_[category]);
  peak_total_ = std::max(peak_total_, live_total_);
}

}  // namespace memplan
