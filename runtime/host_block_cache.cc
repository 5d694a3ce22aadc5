#include "runtime/host_block_cache.h"

#include <algorithm>
#include <new>

#include "graph/expected.h"
#include "runtime/allocator.h"

namespace memplan {

void* NewHostBlock(size_t bytes) {
  return ::operator new (std::max<size_t>(bytes, 1), std::align_val_t{Allocator::kAlignment});
}

void DeleteHostBlock(void* ptr) {
  ::operator delete (ptr, std::align_val_t{Allocator::kAlignment});
}

HostBlockCache::~HostBlockCache() {
  for (auto& [bytes, blocks] : kept_by_size_)
    for (void* ptr : blocks) DeleteHostBlock(ptr);
}

void* HostBlockCache::Take(size_t bytes) {
  void* ptr = nullptr;
  auto it = kept_by_size_.find(bytes);
  if (it != kept_by_size_.end() && !it->second.empty()) {
    ptr = it->second.back();
    it->second.pop_back();
    kept_ -= bytes;
  } else {
    ptr = NewHostBlock(bytes);
  }
  in_use_ += bytes;
  high_water_ = std::max(high_water_, in_use_);
  return ptr;
}

void HostBlockCache::GiveBack(void* ptr, size_t bytes) {
  MEMPLAN_CHECK(bytes <= in_use_);
  in_use_ -= bytes;
  if (in_use_ + kept_ + bytes <= high_water_) {
    kept_by_size_[bytes].push_back(ptr);
    kept_ += bytes;
  } else {
    DeleteHostBlock(ptr);
  }
}

}  // namespace memplan
