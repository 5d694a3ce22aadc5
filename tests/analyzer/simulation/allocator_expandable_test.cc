// The expandable-segments allocator model (analyzer/simulation/expandable_allocator.h) against
// hand-derived byte counts, beside what the default caching allocator does with the same requests.

#include <catch2/catch.hpp>

#include "analyzer/simulation/caching_allocator.h"
#include "analyzer/simulation/expandable_allocator.h"

namespace memplan {
namespace {

constexpr int64_t kMiB = int64_t{1} << 20;

TEST_CASE("expandable segments: freed blocks merge with new pages into one range", "[allocator]") {
  // A = B = 8 MiB, both freed, then C = 30 MiB.
  ExpandableAllocator expandable;
  REQUIRE(expandable.Allocate(0, 8 * kMiB));  // maps one 20 MiB page: A at [0, 8)
  CHECK(expandable.reserved_bytes() == 20 * kMiB);
  REQUIRE(expandable.Allocate(1, 8 * kMiB));  // best fit in the free [8, 20): B at [8, 16)
  CHECK(expandable.reserved_bytes() == 20 * kMiB);
  expandable.Free(0);
  expandable.Free(1);  // [0, 20) free again, one block
  REQUIRE(expandable.Allocate(2, 30 * kMiB));
  // The free tail is 20 MiB: 10 MiB more rounds up to one 20 MiB page; C at [0, 30).
  CHECK(expandable.reserved_bytes() == 40 * kMiB);
  CHECK(expandable.allocated_bytes() == 30 * kMiB);

  // The caching allocator cannot grow a segment: A and B share a 20 MiB segment (A < 10 MiB),
  // and C (>= 10 MiB) gets its own 30 MiB segment: 50 MiB reserved.
  CachingAllocator caching;
  REQUIRE(caching.Allocate(0, 8 * kMiB));
  REQUIRE(caching.Allocate(1, 8 * kMiB));
  caching.Free(0);
  caching.Free(1);
  REQUIRE(caching.Allocate(2, 30 * kMiB));
  CHECK(caching.reserved_bytes() == 50 * kMiB);
}

TEST_CASE("expandable segments: a busy last block makes new pages for the whole request",
          "[allocator]") {
  ExpandableAllocator a;
  REQUIRE(a.Allocate(0, 12 * kMiB));  // [0, 12), free [12, 20)
  REQUIRE(a.Allocate(1, 8 * kMiB));   // exactly the free 8 MiB: [12, 20), nothing left to split
  CHECK(a.reserved_bytes() == 20 * kMiB);
  REQUIRE(a.Allocate(2, 4 * kMiB));  // the last block is busy: one new 20 MiB page, [20, 24)
  CHECK(a.reserved_bytes() == 40 * kMiB);
  CHECK(a.allocated_bytes() == 24 * kMiB);
  a.Free(1);                         // [12, 20) free, between two busy blocks
  REQUIRE(a.Allocate(3, 6 * kMiB));  // best fit: the 8 MiB hole (16 MiB tail is larger)
  CHECK(a.reserved_bytes() == 40 * kMiB);
  // Live: A 12 + the 4 MiB block + 6 MiB (B was freed) = 22 MiB; the 2 MiB left of the hole is
  // split off and free.
  CHECK(a.allocated_bytes() == 22 * kMiB);
}

TEST_CASE("expandable segments split large blocks down to 512 bytes, small pool pages are 2 MiB",
          "[allocator]") {
  // 19.5 MiB in a 20 MiB page leaves 0.5 MiB: split under expandable segments (>= 512 B), so
  // exactly 19.5 MiB is allocated. The caching allocator keeps a large-pool remainder only above
  // 1 MiB and hands out the whole 20 MiB block.
  const int64_t request = 20 * kMiB - kMiB / 2;
  ExpandableAllocator expandable;
  REQUIRE(expandable.Allocate(0, request));
  CHECK(expandable.allocated_bytes() == request);
  CHECK(expandable.reserved_bytes() == 20 * kMiB);
  CachingAllocator caching;
  REQUIRE(caching.Allocate(0, request));
  CHECK(caching.allocated_bytes() == 20 * kMiB);

  // 1000 B rounds to 1024 B in the small pool, whose pages are 2 MiB.
  ExpandableAllocator small;
  REQUIRE(small.Allocate(0, 1000));
  CHECK(small.allocated_bytes() == 1024);
  CHECK(small.reserved_bytes() == 2 * kMiB);
  small.Free(0);
  CHECK(small.allocated_bytes() == 0);
  CHECK(small.reserved_bytes() == 2 * kMiB);  // pages stay mapped
  small.Reset();
  CHECK(small.reserved_bytes() == 0);
}

}  // namespace
}  // namespace memplan
