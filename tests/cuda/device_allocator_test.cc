// The device allocator's counters, caching mode and out-of-memory message ([gpu]), and the
// CUDA/cuBLAS error messages (everywhere).

#include "runtime/cuda/device_allocator.h"

#include <catch2/catch.hpp>

#include "tests/cuda/gpu_test_util.h"

namespace memplan::cuda {
namespace {

TEST_CASE("CUDA and cuBLAS failures name the call", "[cuda]") {
  Status cuda = CheckCuda(cudaErrorMemoryAllocation, "cudaMalloc(64)");
  REQUIRE_FALSE(cuda.ok());
  CHECK(cuda.error().message == "cudaMalloc(64) failed: cudaErrorMemoryAllocation (out of memory)");
  Status blas = CheckCublas(CUBLAS_STATUS_NOT_INITIALIZED, "cublasCreate");
  REQUIRE_FALSE(blas.ok());
  CHECK(blas.error().message.rfind("cublasCreate failed: CUBLAS_STATUS_NOT_INITIALIZED", 0) == 0);
  CHECK(CheckCuda(cudaSuccess, "anything").ok());
}

TEST_CASE("device allocator counts live and peak bytes per category", "[cuda][gpu]") {
  MEMPLAN_REQUIRE_GPU();
  DeviceAllocator allocator;
  auto a = allocator.Allocate(1000, MemoryCategory::kActivations);
  auto b = allocator.Allocate(24, MemoryCategory::kParameters);
  REQUIRE(a.ok());
  REQUIRE(b.ok());
  CHECK(allocator.live_total() == 1024);
  CHECK(allocator.live_bytes()[MemoryCategory::kActivations] == 1000);
  REQUIRE(allocator.Free(*a).ok());
  CHECK(allocator.live_total() == 24);
  CHECK(allocator.peak_total() == 1024);
  CHECK(allocator.peak_bytes()[MemoryCategory::kActivations] == 1000);
  allocator.Recategorize(*b, MemoryCategory::kGradients);
  CHECK(allocator.live_bytes()[MemoryCategory::kGradients] == 24);
  CHECK(allocator.live_bytes()[MemoryCategory::kParameters] == 0);
  CHECK(allocator.device_allocations() == 2);  // pass-through: one cudaMalloc each
  REQUIRE(allocator.Free(*b).ok());
  CHECK(allocator.reserved_bytes() == 0);
}

TEST_CASE("caching mode reuses freed blocks", "[cuda][gpu]") {
  MEMPLAN_REQUIRE_GPU();
  DeviceAllocator allocator({/*caching=*/true, /*round_bytes=*/512});
  auto first = allocator.Allocate(1000, MemoryCategory::kTransients);  // rounds to 1024
  REQUIRE(first.ok());
  void* address = *first;
  REQUIRE(allocator.Free(address).ok());
  CHECK(allocator.reserved_bytes() == 1024);                           // kept, not returned
  auto second = allocator.Allocate(900, MemoryCategory::kTransients);  // also 1024: reused
  REQUIRE(second.ok());
  CHECK(*second == address);
  CHECK(allocator.device_allocations() == 1);
  CHECK(allocator.live_total() == 900);  // counted as requested
  REQUIRE(allocator.Free(*second).ok());
  REQUIRE(allocator.EmptyCache().ok());
  CHECK(allocator.reserved_bytes() == 0);
}

TEST_CASE("out of memory names the step, the node and the sizes", "[cuda][gpu]") {
  MEMPLAN_REQUIRE_GPU();
  DeviceAllocator allocator;
  allocator.SetSite("backward fc1", "fc1");
  // 1 PiB exceeds every GPU's memory.
  auto huge = allocator.Allocate(size_t{1} << 50, MemoryCategory::kActivations);
  REQUIRE_FALSE(huge.ok());
  CHECK(huge.error().message.rfind("out of memory at backward fc1 (fc1): needed 1.0 PiB, free ",
                                   0) == 0);
  CHECK(allocator.live_total() == 0);
}

}  // namespace
}  // namespace memplan::cuda
