// The caching-allocator model under PYTORCH_CUDA_ALLOC_CONF's max_split_size_mb and
// roundup_power2_divisions, against sequences worked out by hand from
// c10/cuda/CUDACachingAllocator.cpp (round_size / roundup_power2_next_division, get_free_block's
// oversize rules, should_split).

#include <catch2/catch.hpp>

#include "analyzer/simulation/caching_allocator.h"

namespace memplan {
namespace {

constexpr int64_t kMiB = 1 << 20;

CachingAllocatorOptions MaxSplit(int64_t mib) {
  CachingAllocatorOptions o;
  o.max_split_size = mib * kMiB;
  return o;
}

TEST_CASE("caching settings: roundup_power2_divisions rounds to a quarter of a power of two",
          "[allocator]") {
  CachingAllocatorOptions o;
  o.roundup_power2_divisions = 4;
  CachingAllocator c(o);
  // 1,200,000 B: floor power of two 2^20, step 2^20 / 4 = 262,144; 1,200,000 rounds down to
  // 2^20 (its low bits are 151,424 < 262,144), so up to 2^20 + 262,144 = 1,310,720.
  CHECK(c.RoundSize(1200000) == 1310720);
  CHECK(c.RoundSize(2 * kMiB) == 2 * kMiB);               // a power of two stays
  CHECK(c.RoundSize(kMiB + 262144) == kMiB + 262144);     // on a step: stays
  CHECK(c.RoundSize(2000) == 2048);                       // <= 512 x 4: 512 B rounding
  CHECK(c.RoundSize(3 * kMiB + 1) == 3 * kMiB + 524288);  // step 2^21 / 4 = 512 KiB
  // The rounded size decides the pool: 1,000,000 B rounds to 1,048,576 (small pool, 2 MiB
  // segment); 1,048,577 B to 1,310,720 (large pool, a 20 MiB segment).
  REQUIRE(c.Allocate(0, 1000000));
  CHECK(c.allocated_bytes() == kMiB);
  CHECK(c.reserved_bytes() == 2 * kMiB);
  REQUIRE(c.Allocate(1, kMiB + 1));
  CHECK(c.allocated_bytes() == kMiB + 1310720);
  CHECK(c.reserved_bytes() == 22 * kMiB);
  // Divisions 3 step like 2 (rounded down to a power of two: floor >> 1).
  o.roundup_power2_divisions = 3;
  CHECK(CachingAllocator(o).RoundSize(1200000) == 3 * kMiB / 2);
}

TEST_CASE("caching settings: a request below max_split_size takes no oversize block",
          "[allocator]") {
  // max_split_size_mb:32. A freed 40 MiB segment is oversize: a 10 MiB request may not take
  // it and opens its own 10 MiB segment (50 MiB reserved). Without the setting it is split.
  CachingAllocator c(MaxSplit(32));
  REQUIRE(c.Allocate(0, 40 * kMiB));
  c.Free(0);
  REQUIRE(c.Allocate(1, 10 * kMiB));
  CHECK(c.reserved_bytes() == 50 * kMiB);
  CachingAllocator plain;
  REQUIRE(plain.Allocate(0, 40 * kMiB));
  plain.Free(0);
  REQUIRE(plain.Allocate(1, 10 * kMiB));
  CHECK(plain.reserved_bytes() == 40 * kMiB);
}

TEST_CASE("caching settings: an oversize request takes a block less than 20 MiB larger, whole",
          "[allocator]") {
  CachingAllocator c(MaxSplit(32));
  REQUIRE(c.Allocate(0, 40 * kMiB));
  c.Free(0);
  // 36 MiB >= 32 MiB: the 40 MiB block is under 36 + 20 MiB, taken whole (no split for an
  // oversize request): allocated 40 MiB, still one segment.
  REQUIRE(c.Allocate(1, 36 * kMiB));
  CHECK(c.allocated_bytes() == 40 * kMiB);
  CHECK(c.reserved_bytes() == 40 * kMiB);
  c.Free(1);
  // 34 MiB: 40 < 34 + 20 as well; but 100 MiB free and an 80 MiB request: 100 >= 80 + 20, so
  // the block is refused and an 80 MiB segment made.
  REQUIRE(c.Allocate(2, 100 * kMiB));
  c.Free(2);
  REQUIRE(c.Allocate(3, 80 * kMiB));
  CHECK(c.reserved_bytes() == 40 * kMiB + 100 * kMiB + 80 * kMiB);
  // The best fit alone decides: an 81 MiB request's best fit is the free 100 MiB block
  // (< 81 + 20), taken whole even though a 40 MiB block is free too.
  REQUIRE(c.Allocate(4, 81 * kMiB));
  CHECK(c.allocated_bytes() == 80 * kMiB + 100 * kMiB);
  CHECK(c.reserved_bytes() == 220 * kMiB);
}

TEST_CASE("caching settings: a block below max_split_size still splits", "[allocator]") {
  CachingAllocator c(MaxSplit(32));
  REQUIRE(c.Allocate(0, 30 * kMiB));  // 30 MiB segment
  c.Free(0);
  // 12 MiB < 32: the 30 MiB block (not oversize) is split, 18 MiB remains free.
  REQUIRE(c.Allocate(1, 12 * kMiB));
  CHECK(c.allocated_bytes() == 12 * kMiB);
  REQUIRE(c.Allocate(2, 18 * kMiB));
  CHECK(c.reserved_bytes() == 30 * kMiB);
}

}  // namespace
}  // namespace memplan
