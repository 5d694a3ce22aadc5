// The host block cache: freed storage comes back for a request of its size, and the cache never
// holds the process above its own high-water mark.

#include <catch2/catch.hpp>

#include "runtime/allocator.h"
#include "runtime/host_block_cache.h"
#include "runtime/tensor.h"

namespace memplan {
namespace {

TEST_CASE("a freed block is handed out again for the same size", "[kernels]") {
  HostBlockCache cache;
  void* a = cache.Take(100);
  void* b = cache.Take(200);
  CHECK(cache.high_water() == 300);
  cache.GiveBack(a, 100);
  // in use 200 + kept 100 = 300, within the high water of 300: kept.
  CHECK(cache.bytes_kept() == 100);
  CHECK(cache.Take(100) == a);
  CHECK(cache.bytes_kept() == 0);
  CHECK(cache.bytes_in_use() == 300);
  cache.GiveBack(a, 100);
  cache.GiveBack(b, 200);
  CHECK(cache.bytes_in_use() == 0);
  CHECK(cache.bytes_kept() == 300);
}

TEST_CASE("the block cache stays within the high-water mark", "[kernels]") {
  HostBlockCache cache;
  void* a = cache.Take(100);
  cache.GiveBack(a, 100);  // in use 0 + kept 0 + 100 <= 100: kept
  CHECK(cache.bytes_kept() == 100);
  void* b = cache.Take(50);  // no 50-byte block kept: a fresh one, in use 50
  CHECK(b != a);
  CHECK(cache.high_water() == 100);
  cache.GiveBack(b, 50);  // 0 + 100 + 50 = 150 > 100: back to the heap
  CHECK(cache.bytes_kept() == 100);
  CHECK(cache.bytes_in_use() == 0);
}

TEST_CASE("reused storage changes no counted bytes", "[kernels]") {
  CountingCpuAllocator allocator;
  const float* first = nullptr;
  {
    // fp16 [8]: 16 accounted bytes in 32 bytes of float storage.
    Tensor t = Tensor::Zeros({8}, DType::kFloat16, allocator, MemoryCategory::kActivations);
    first = t.data();
  }
  CHECK(allocator.host_blocks().bytes_kept() == 32);
  Tensor again = Tensor::Zeros({8}, DType::kFloat16, allocator, MemoryCategory::kActivations);
  CHECK(again.data() == first);
  for (int64_t i = 0; i < again.numel(); ++i) CHECK(again[i] == 0.0f);  // Zeros clears reuse
  CHECK(allocator.live_total() == 16);
  CHECK(allocator.peak_total() == 16);
  CHECK(allocator.num_allocations() == 2);
}

}  // namespace
}  // namespace memplan
