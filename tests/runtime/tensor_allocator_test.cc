// Tensor storage and the counting allocator's bookkeeping.

#include <catch2/catch.hpp>

#include <limits>

#include "runtime/tensor.h"

namespace memplan {
namespace {

TEST_CASE("the counting allocator accounts device bytes per category", "[kernels]") {
  CountingCpuAllocator allocator;
  {
    // fp16 [10] accounts 10 * 2 = 20 bytes though its CPU storage holds 10 floats.
    Tensor half = Tensor::Zeros({10}, DType::kFloat16, allocator, MemoryCategory::kActivations);
    Tensor weights = Tensor::Zeros({2, 2}, DType::kFloat32, allocator, MemoryCategory::kParameters);
    CHECK(half.accounted_bytes() == 20);
    CHECK(allocator.live_bytes()[MemoryCategory::kActivations] == 20);
    CHECK(allocator.live_bytes()[MemoryCategory::kParameters] == 16);
    CHECK(allocator.live_total() == 36);
    {
      Tensor temp = Tensor::Zeros({3}, DType::kInt64, allocator, MemoryCategory::kTransients);
      CHECK(allocator.live_total() == 60);  // + 3 * 8
      Tensor copy = temp;                   // a second handle, not a second buffer
      CHECK(allocator.num_live_buffers() == 3);
    }
    CHECK(allocator.live_total() == 36);
    CHECK(allocator.peak_total() == 60);
    CHECK(allocator.peak_bytes()[MemoryCategory::kTransients] == 24);
    half.Recategorize(MemoryCategory::kTransients);
    CHECK(allocator.live_bytes()[MemoryCategory::kActivations] == 0);
    CHECK(allocator.live_bytes()[MemoryCategory::kTransients] == 20);
    CHECK(allocator.peak_total() == 60);  // moving bytes between categories is not growth
    allocator.ResetPeaks();
    CHECK(allocator.peak_total() == 36);
  }
  CHECK(allocator.live_total() == 0);
  CHECK(allocator.num_live_buffers() == 0);
  CHECK(allocator.num_allocations() == 3);
}

TEST_CASE("unzeroed tensors are accounted exactly as zeroed ones", "[kernels]") {
  CountingCpuAllocator allocator;
  {
    // bf16 [3, 5]: 15 elements * 2 bytes = 30 accounted bytes, as Zeros would account.
    const Tensor t =
        Tensor::Uninitialized({3, 5}, DType::kBFloat16, allocator, MemoryCategory::kActivations);
    CHECK(t.numel() == 15);
    CHECK(t.accounted_bytes() == 30);
    CHECK(allocator.live_bytes()[MemoryCategory::kActivations] == 30);
    // The element count is kept through views and copies: [5, 3] and [15] still hold 15.
    CHECK(t.View({5, 3}).numel() == 15);
    CHECK(t.View({15}).numel() == 15);
    const Tensor copy = t;
    CHECK(copy.numel() == 15);
    // A [0, 4] tensor has no elements and accounts nothing.
    const Tensor empty =
        Tensor::Uninitialized({0, 4}, DType::kFloat32, allocator, MemoryCategory::kOther);
    CHECK(empty.numel() == 0);
    CHECK(allocator.live_total() == 30);
  }
  CHECK(allocator.live_total() == 0);
  CHECK(allocator.peak_total() == 30);
  // An undefined tensor keeps the rank-0 count it always had (one element, no storage).
  CHECK(Tensor().numel() == 1);
}

TEST_CASE("tensor views share storage, clones do not", "[kernels]") {
  const Tensor x = Tensor::FromValues({2, 3}, {1, 2, 3, 4, 5, 6});
  const Tensor v = x.View({3, 2});
  v.mutable_data()[0] = 10.0f;
  CHECK(x.data()[0] == 10.0f);
  const Tensor c = x.Clone(PlainCpuAllocator(), MemoryCategory::kOther);
  c.mutable_data()[1] = 20.0f;
  CHECK(x.data()[1] == 2.0f);
  CHECK_FALSE(Tensor().defined());
  CHECK(Tensor::FromValues({}, {7.0f}).numel() == 1);  // a scalar has one element
  CHECK(ShapeToString({2, 3}) == "[2, 3]");
}

TEST_CASE("integer views of float storage saturate at the int64 range", "[kernels]") {
  const Tensor t = Tensor::FromValues(
      {4}, {9.2233720368547758e18f, -9.2233720368547758e18f, -3.9f, 42.0f}, DType::kInt64);
  CHECK(t.ToInt64Vector() == std::vector<int64_t>{std::numeric_limits<int64_t>::max(),
                                                  std::numeric_limits<int64_t>::min(), -3, 42});
}

}  // namespace
}  // namespace memplan
