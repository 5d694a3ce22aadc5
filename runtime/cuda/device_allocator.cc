#include "runtime/cuda/device_allocator.h"

#include <cuda_runtime_api.h>

#include <algorithm>
#include <utility>

#include "analyzer/text/memory_size.h"
#include "runtime/cuda/cuda_status.h"

namespace memplan::cuda {
namespace {

// A cached block serves a request only when it wastes at most this factor, so one huge cached
// block is not pinned down by a tiny tensor.
constexpr size_t kMaxReuseWasteFactor = 2;

// RAII bracket around one device call for the observer.
class ObservedCall {
 public:
  explicit ObservedCall(DeviceCallObserver* observer) : observer_(observer) {
    if (observer_ != nullptr) observer_->BeforeDeviceCall();
  }
  ~ObservedCall() {
    if (observer_ != nullptr) observer_->AfterDeviceCall();
  }
  ObservedCall(const ObservedCall&) = delete;
  ObservedCall& operator=(const ObservedCall&) = delete;

 private:
  DeviceCallObserver* observer_;
};

}  // namespace

DeviceAllocator::DeviceAllocator(DeviceAllocatorOptions options) : options_(options) {
  if (options_.round_bytes == 0) options_.round_bytes = 1;
}

DeviceAllocator::~DeviceAllocator() {
  // Errors cannot be reported from a destructor; the device reclaims everything at exit anyway.
  for (auto& [ptr, block] : live_blocks_) (void)cudaFree(ptr);
  for (auto& [size, ptr] : cached_blocks_) (void)cudaFree(ptr);
}

Expected<void*> DeviceAllocator::DeviceMalloc(size_t bytes) {
  void* ptr = nullptr;
  cudaError_t result;
  {
    ObservedCall call(observer_);
    result = cudaMalloc(&ptr, bytes);
  }
  if (result == cudaErrorMemoryAllocation && !cached_blocks_.empty()) {
    (void)cudaGetLastError();
    MEMPLAN_RETURN_IF_ERROR(EmptyCache());
    ObservedCall call(observer_);
    result = cudaMalloc(&ptr, bytes);
  }
  if (result == cudaErrorMemoryAllocation) {
    (void)cudaGetLastError();  // not sticky, but keep later checks clean
    return OutOfMemory(bytes);
  }
  MEMPLAN_RETURN_IF_ERROR(CheckCuda(result, "cudaMalloc(" + std::to_string(bytes) + ")"));
  reserved_ += static_cast<int64_t>(bytes);
  peak_reserved_ = std::max(peak_reserved_, reserved_);
  ++device_allocations_;
  return ptr;
}

Status DeviceAllocator::DeviceFree(void* ptr) {
  cudaError_t result;
  {
    ObservedCall call(observer_);
    result = cudaFree(ptr);
  }
  return CheckCuda(result, "cudaFree");
}

Error DeviceAllocator::OutOfMemory(size_t bytes) const {
  size_t free_bytes = 0;
  size_t total_bytes = 0;
  std::string free_text = "unknown";
  if (cudaMemGetInfo(&free_bytes, &total_bytes) == cudaSuccess) {
    free_text = FormatBytes(static_cast<int64_t>(free_bytes));
  } else {
    (void)cudaGetLastError();
  }
  const std::string step = site_step_.empty() ? "an unnamed step" : site_step_;
  const std::string node = site_node_.empty() ? "" : " (" + site_node_ + ")";
  return MakeError("out of memory at " + step + node + ": needed " +
                   FormatBytes(static_cast<int64_t>(bytes)) + ", free " + free_text);
}

Expected<void*> DeviceAllocator::Allocate(size_t bytes, MemoryCategory category,
                                          size_t accounted_bytes) {
  // Even an empty request gets its own block so pointers stay unique.
  size_t size = std::max<size_t>(bytes, 1);
  void* ptr = nullptr;
  if (options_.caching) {
    size = (size + options_.round_bytes - 1) / options_.round_bytes * options_.round_bytes;
    auto cached = cached_blocks_.lower_bound(size);
    if (cached != cached_blocks_.end() && cached->first <= size * kMaxReuseWasteFactor) {
      size = cached->first;
      ptr = cached->second;
      cached_blocks_.erase(cached);
    }
  }
  if (ptr == nullptr) {
    MEMPLAN_TRY(ptr, DeviceMalloc(size));
  }
  live_blocks_[ptr] = Block{size, accounted_bytes, category};
  Count(category, static_cast<int64_t>(accounted_bytes));
  return ptr;
}

Status DeviceAllocator::Free(void* ptr) {
  auto it = live_blocks_.find(ptr);
  MEMPLAN_CHECK(it != live_blocks_.end());
  const Block block = it->second;
  live_blocks_.erase(it);
  Count(block.category, -static_cast<int64_t>(block.accounted));
  if (options_.caching) {
    cached_blocks_.emplace(block.size, ptr);
    return OkStatus();
  }
  reserved_ -= static_cast<int64_t>(block.size);
  return DeviceFree(ptr);
}

void DeviceAllocator::Recategorize(void* ptr, MemoryCategory category) {
  auto it = live_blocks_.find(ptr);
  MEMPLAN_CHECK(it != live_blocks_.end());
  Block& block = it->second;
  Count(block.category, -static_cast<int64_t>(block.accounted));
  block.category = category;
  Count(block.category, static_cast<int64_t>(block.accounted));
}

Status DeviceAllocator::EmptyCache() {
  Status status = OkStatus();
  for (auto& [size, ptr] : cached_blocks_) {
    reserved_ -= static_cast<int64_t>(size);
    Status freed = DeviceFree(ptr);
    if (status.ok() && !freed.ok()) status = freed;
  }
  cached_blocks_.clear();
  return status;
}

void DeviceAllocator::SetSite(std::string step, std::string node) {
  site_step_ = std::move(step);
  site_node_ = std::move(node);
}

void DeviceAllocator::ResetPeaks() {
  peak_ = live_;
  peak_total_ = live_total_;
  peak_reserved_ = reserved_;
}

void DeviceAllocator::Count(MemoryCategory category, int64_t bytes) {
  live_[category] += bytes;
  live_total_ += bytes;
  peak_[category] = std::max(peak_[category], live_[category]);
  peak_total_ = std::max(peak_total_, live_total_);
}

}  // namespace memplan::cuda
