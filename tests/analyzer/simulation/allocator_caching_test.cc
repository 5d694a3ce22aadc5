// The caching-allocator model against request sequences computed by hand from the rules of
// c10/cuda/CUDACachingAllocator.cpp (round_size, get_allocation_size, should_split, best fit).

#include <catch2/catch.hpp>

#include "analyzer/simulation/caching_allocator.h"
#include "analyzer/simulation/exact_allocator.h"

namespace memplan {
namespace {

constexpr int64_t kMiB = 1 << 20;

TEST_CASE("exact allocator counts live request bytes", "[allocator]") {
  ExactAllocator exact;
  CHECK(exact.Allocate(0, 100));
  CHECK(exact.Allocate(1, 28));
  CHECK(exact.allocated_bytes() == 128);
  exact.Free(0);
  CHECK(exact.allocated_bytes() == 28);
  CHECK(exact.reserved_bytes() == 28);
  exact.Reset();
  CHECK(exact.allocated_bytes() == 0);
}

TEST_CASE("caching: rounding and segment sizes", "[allocator]") {
  CachingAllocator c;
  CHECK(c.RoundSize(1) == 512);
  CHECK(c.RoundSize(512) == 512);
  CHECK(c.RoundSize(513) == 1024);
  CHECK(c.SegmentSize(512) == 2 * kMiB);          // small pool: 2 MiB segments
  CHECK(c.SegmentSize(kMiB) == 2 * kMiB);         // exactly 1 MiB is still small
  CHECK(c.SegmentSize(kMiB + 512) == 20 * kMiB);  // 1-10 MiB: 20 MiB segments
  CHECK(c.SegmentSize(10 * kMiB) == 10 * kMiB);   // >= 10 MiB: rounded to 2 MiB
  CHECK(c.SegmentSize(30 * kMiB + 512) == 32 * kMiB);
}

TEST_CASE("caching: 100 B is a 512 B block in a 2 MiB segment", "[allocator]") {
  CachingAllocator c;
  REQUIRE(c.Allocate(0, 100));
  CHECK(c.allocated_bytes() == 512);
  CHECK(c.reserved_bytes() == 2 * kMiB);
  // The remainder (2 MiB - 512) stays in the segment: 4095 more 512 B blocks fit without a new
  // segment, the 4097th block needs a second one.
  for (int i = 1; i < 4096; ++i) REQUIRE(c.Allocate(i, 512));
  CHECK(c.reserved_bytes() == 2 * kMiB);
  REQUIRE(c.Allocate(4096, 1));
  CHECK(c.reserved_bytes() == 4 * kMiB);
  CHECK(c.num_segments() == 2);
}

TEST_CASE("caching: 5 MiB takes a 20 MiB segment and the rest is split off", "[allocator]") {
  CachingAllocator c;
  REQUIRE(c.Allocate(0, 5 * kMiB));
  CHECK(c.reserved_bytes() == 20 * kMiB);
  CHECK(c.allocated_bytes() == 5 * kMiB);
  REQUIRE(c.Allocate(1, 5 * kMiB));  // served from the 15 MiB remainder
  CHECK(c.reserved_bytes() == 20 * kMiB);
  CHECK(c.allocated_bytes() == 10 * kMiB);
}

TEST_CASE("caching: 30 MiB + 1 is rounded to a 32 MiB segment", "[allocator]") {
  CachingAllocator c;
  REQUIRE(c.Allocate(0, 30 * kMiB + 1));
  CHECK(c.reserved_bytes() == 32 * kMiB);
  // 32 MiB - (30 MiB + 512) = 2 MiB - 512 > 1 MiB remains: split, so allocated is the request.
  CHECK(c.allocated_bytes() == 30 * kMiB + 512);
}

TEST_CASE("caching: a large block is not split for a remainder of 1 MiB or less", "[allocator]") {
  CachingAllocator c;
  REQUIRE(c.Allocate(0, 9 * kMiB + kMiB / 2));  // 20 MiB segment, 10.5 MiB split off
  c.Free(0);                                    // merges back to one free 20 MiB block
  CHECK(c.allocated_bytes() == 0);
  CHECK(c.reserved_bytes() == 20 * kMiB);
  REQUIRE(c.Allocate(1, 19 * kMiB + kMiB / 2));  // 0.5 MiB would remain: whole block handed out
  CHECK(c.allocated_bytes() == 20 * kMiB);
  CHECK(c.reserved_bytes() == 20 * kMiB);
}

TEST_CASE("caching: best fit picks the smallest free block", "[allocator]") {
  CachingAllocator c;
  // One 20 MiB segment carved into [2 MiB][4 MiB][3 MiB][rest].
  REQUIRE(c.Allocate(0, 2 * kMiB));
  REQUIRE(c.Allocate(1, 4 * kMiB));
  REQUIRE(c.Allocate(2, 3 * kMiB));
  REQUIRE(c.Allocate(3, 11 * kMiB - 2 * kMiB));  // 9 MiB of the remaining 11, 2 MiB split off
  c.Free(0);                                     // free: 2 MiB at 0
  c.Free(2);                                     // free: 3 MiB at 6 MiB
  // Free blocks now: 2 MiB, 3 MiB, 2 MiB (tail). A 2.5 MiB request fits only the 3 MiB block,
  // leaving 0.5 MiB (not split, so 3 MiB is allocated).
  REQUIRE(c.Allocate(4, 2 * kMiB + kMiB / 2));
  CHECK(c.allocated_bytes() == 4 * kMiB + 9 * kMiB + 3 * kMiB);
  CHECK(c.reserved_bytes() == 20 * kMiB);
  // A 1.5 MiB request takes a 2 MiB block whole (0.5 MiB remainder); a third large request
  // (3 MiB) finds no free block big enough and opens a new 20 MiB segment.
  REQUIRE(c.Allocate(5, kMiB + kMiB / 2));
  REQUIRE(c.Allocate(6, 3 * kMiB));
  CHECK(c.reserved_bytes() == 40 * kMiB);
}

TEST_CASE("caching: small and large pools never share segments", "[allocator]") {
  CachingAllocator c;
  REQUIRE(c.Allocate(0, 5 * kMiB));  // large pool, 20 MiB segment with 15 MiB free
  REQUIRE(c.Allocate(1, 1000));      // small request: needs its own 2 MiB segment
  CHECK(c.reserved_bytes() == 22 * kMiB);
  CHECK(c.num_segments() == 2);
}

TEST_CASE("caching: out of memory releases free segments, then fails", "[allocator]") {
  CachingAllocatorOptions options;
  options.capacity = 40 * kMiB;
  CachingAllocator c(options);
  REQUIRE(c.Allocate(0, 5 * kMiB));  // 20 MiB segment
  c.Free(0);
  // 30 MiB needs a new segment: 20 + 30 > 40, so the free 20 MiB segment is released first.
  REQUIRE(c.Allocate(1, 30 * kMiB));
  CHECK(c.reserved_bytes() == 30 * kMiB);
  // Another 20 MiB segment cannot fit and nothing is free to release.
  CHECK_FALSE(c.Allocate(2, 5 * kMiB));
  CHECK(c.reserved_bytes() == 30 * kMiB);
}

}  // namespace
}  // namespace memplan
