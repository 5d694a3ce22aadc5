#include "analyzer/simulation/exact_allocator.h"

#include "graph/expected.h"

namespace memplan {

void ExactAllocator::Reset() {
  size_by_handle_.clear();
  live_bytes_ = 0;
}

bool ExactAllocator::Allocate(int64_t handle, int64_t bytes) {
  MEMPLAN_CHECK(handle >= 0 && bytes >= 0);
  auto index = static_cast<size_t>(handle);
  if (size_by_handle_.size() <= index) size_by_handle_.resize(index + 1, -1);
  MEMPLAN_CHECK(size_by_handle_[index] < 0);
  size_by_handle_[index] = bytes;
  live_bytes_ += bytes;
  return true;
}

void ExactAllocator::Free(int64_t handle) {
  MEMPLAN_CHECK(handle >= 0 && static_cast<size_t>(handle) < size_by_handle_.size());
  int64_t& size = size_by_handle_[static_cast<size_t>(handle)];
  MEMPLAN_CHECK(size >= 0);
  live_bytes_ -= size;
  size = -1;
}

}  // namespace memplan
