#pragma once
// The strategy half of the simulator: how allocation requests become device memory. The simulator
// (the mechanism) replays a program's Alloc/Free events against one of these (XLA HeapAlgorithm).
// Shipped models: ExactAllocator (live bytes: the lower bound) and CachingAllocator (PyTorch's
// CUDA caching allocator: rounding, pools, segments, best fit, splitting). The difference of
// their peaks is the fragmentation the simulator reports.

#include <cstdint>
#include <string_view>

namespace memplan {

class AllocatorModel {
 public:
  virtual ~AllocatorModel() = default;

  // Forgets every allocation and segment (the simulator calls it before a replay).
  virtual void Reset() = 0;
  // `handle` is unique among live allocations (the simulator passes the BufferId's index).
  // Returns false when the model is out of memory (only models given a capacity can be).
  // REQUIRES: bytes >= 0, handle not live.
  virtual bool Allocate(int64_t handle, int64_t bytes) = 0;
  // REQUIRES: handle live.
  virtual void Free(int64_t handle) = 0;

  // Bytes held by live allocations as the model counts them (after rounding/unsplit blocks).
  virtual int64_t allocated_bytes() const = 0;
  // Bytes obtained from the device (segments); never less than allocated_bytes().
  virtual int64_t reserved_bytes() const = 0;
  virtual std::string_view name() const = 0;
};

}  // namespace memplan
