#pragma once
// The no-fragmentation lower bound: allocated = reserved = the sum of live request sizes
// (XLA NoFragmentationStatsHeap).

#include <cstdint>
#include <vector>

#include "analyzer/program/allocator_model.h"

namespace memplan {

class ExactAllocator final : public AllocatorModel {
 public:
  void Reset() override;
  bool Allocate(int64_t handle, int64_t bytes) override;
  void Free(int64_t handle) override;
  int64_t allocated_bytes() const override { return live_bytes_; }
  int64_t reserved_bytes() const override { return live_bytes_; }
  std::string_view name() const override { return "exact"; }

 private:
  std::vector<int64_t> size_by_handle_;  // -1 = not live
  int64_t live_bytes_ = 0;
};

}  // namespace memplan
