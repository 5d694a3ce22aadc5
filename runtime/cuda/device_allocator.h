#pragma once
// Device memory for the CUDA backend: cudaMalloc/cudaFree (never managed memory, so what is live
// is resident), instrumented like the CPU CountingCpuAllocator: live and peak bytes per
// MemoryCategory and in total, in the bytes the caller asked for (the simulator's units).
//
// Two modes:
//  * pass-through (default): one cudaMalloc per Allocate, one cudaFree per Free. The profiler
//    uses it, so every program buffer is one CUPTI MEMORY2 record it can attribute.
//  * caching: freed blocks are kept and reused for later requests of a size that fits (requests
//    rounded up to `round_bytes`, best fit, no splitting), as PyTorch's caching allocator keeps
//    segments; `reserved` counts what is really held from the device.
//
// Out of memory: the caching mode first returns its cached blocks to the device and retries; then
// Allocate fails with "out of memory at <step> (<node>): needed 1.5 GiB, free 1.2 GiB" naming the
// site set by SetSite() and cudaMemGetInfo's free bytes.

#include <cstddef>
#include <cstdint>
#include <map>
#include <string>
#include <unordered_map>

#include "analyzer/program/memory_category.h"
#include "graph/expected.h"

namespace memplan::cuda {

// Told about every cudaMalloc/cudaFree the allocator makes, so a profiler can bracket them (the
// CUPTI collector pushes a kAllocator external-correlation region) and tell them from library
// allocations.
class DeviceCallObserver {
 public:
  virtual ~DeviceCallObserver() = default;
  virtual void BeforeDeviceCall() = 0;
  virtual void AfterDeviceCall() = 0;
};

struct DeviceAllocatorOptions {
  // Keep freed blocks for reuse instead of returning them with cudaFree.
  bool caching = false;
  // Caching mode: requests are rounded up to a multiple of this (PyTorch's kMinBlockSize, 512 B).
  size_t round_bytes = 512;
};

class DeviceAllocator {
 public:
  explicit DeviceAllocator(DeviceAllocatorOptions options = {});
  // Returns every block (live or cached) to the device.
  ~DeviceAllocator();
  DeviceAllocator(const DeviceAllocator&) = delete;
  DeviceAllocator& operator=(const DeviceAllocator&) = delete;

  // A device buffer of at least `bytes` bytes (256-byte aligned, as cudaMalloc's are), counted
  // as `bytes` under `category`; an empty request still yields a unique pointer.
  Expected<void*> Allocate(size_t bytes, MemoryCategory category) {
    return Allocate(bytes, category, bytes);
  }
  // The same, counted as `accounted_bytes` (a tensor stored wider than its dtype: the CUDA
  // backend keeps int64/bool tensors as fp32 but accounts them in their dtype's bytes).
  Expected<void*> Allocate(size_t bytes, MemoryCategory category, size_t accounted_bytes);
  // REQUIRES: ptr came from Allocate and was not freed yet.
  Status Free(void* ptr);
  // Moves a live buffer to another category in the counters.
  void Recategorize(void* ptr, MemoryCategory category);
  // Caching mode: returns cached (free) blocks to the device.
  Status EmptyCache();

  // Where the next allocations happen, for out-of-memory messages ("backward fc1", "fc1").
  void SetSite(std::string step, std::string node);
  // REQUIRES: `observer` outlives the allocator or is reset to nullptr first.
  void SetObserver(DeviceCallObserver* observer) { observer_ = observer; }

  const CategoryBytes& live_bytes() const { return live_; }
  const CategoryBytes& peak_bytes() const { return peak_; }  // per category
  int64_t live_total() const { return live_total_; }
  int64_t peak_total() const { return peak_total_; }    // peak of the sum
  int64_t reserved_bytes() const { return reserved_; }  // held from the device, cache included
  int64_t peak_reserved_bytes() const { return peak_reserved_; }
  int64_t device_allocations() const { return device_allocations_; }  // cudaMalloc calls
  // Starts a new measurement window: peaks drop to the current values.
  void ResetPeaks();

 private:
  struct Block {
    size_t size = 0;       // bytes held from the device
    size_t accounted = 0;  // bytes counted while live
    MemoryCategory category = MemoryCategory::kOther;
  };
  Expected<void*> DeviceMalloc(size_t bytes);
  Status DeviceFree(void* ptr);
  Error OutOfMemory(size_t bytes) const;
  void Count(MemoryCategory category, int64_t bytes);

  DeviceAllocatorOptions options_;
  DeviceCallObserver* observer_ = nullptr;
  std::string site_step_;
  std::string site_node_;
  std::unordered_map<void*, Block> live_blocks_;
  std::multimap<size_t, void*> cached_blocks_;  // size -> block, for best fit
  CategoryBytes live_;
  CategoryBytes peak_;
  int64_t live_total_ = 0;
  int64_t peak_total_ = 0;
  int64_t reserved_ = 0;
  int64_t peak_reserved_ = 0;
  int64_t device_allocations_ = 0;
};

}  // namespace memplan::cuda
