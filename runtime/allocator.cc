#include "runtime/allocator.h"

#include "graph/expected.h"

namespace memplan {
namespace {

class PlainAllocator final : public Allocator {
 public:
  void* Allocate(const AllocationRequest& request) override {
    return NewHostBlock(request.storage_bytes);
  }
  void Free(void* ptr) override { DeleteHostBlock(ptr); }
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
  void* ptr = host_blocks_.Take(request.storage_bytes);
  blocks_.emplace(ptr, Block{request.storage_bytes, request.accounted_bytes, request.category});
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
  const size_t storage_bytes = it->second.storage_bytes;
  blocks_.erase(it);
  host_blocks_.GiveBack(ptr, storage_bytes);
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
