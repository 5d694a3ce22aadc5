#include <catch2/catch.hpp>

#include "analyzer/report/timeline_downsample.h"

namespace memplan {
namespace {

std::vector<TimelinePoint> TimelineOf(const std::vector<int64_t>& live) {
  std::vector<TimelinePoint> timeline(live.size());
  for (size_t i = 0; i < live.size(); ++i) timeline[i].live_bytes = live[i];
  return timeline;
}

TEST_CASE("downsampling keeps the largest point of each bucket", "[report]") {
  // n = 10, 3 buckets: bounds b*10/3 = 0, 3, 6, 10.
  auto buckets = DownsampleTimeline(TimelineOf({1, 5, 2, 7, 7, 3, 0, 9, 4, 9}), 3);
  REQUIRE(buckets.size() == 3);
  CHECK(buckets[0].begin == 0);
  CHECK(buckets[0].end == 3);
  CHECK(buckets[0].kept == 1);  // 5
  CHECK(buckets[1].begin == 3);
  CHECK(buckets[1].end == 6);
  CHECK(buckets[1].kept == 3);  // 7 and 7: the first one
  CHECK(buckets[2].begin == 6);
  CHECK(buckets[2].end == 10);
  CHECK(buckets[2].kept == 7);  // 9 and 9: the first one
}

TEST_CASE("a short timeline is kept whole", "[report]") {
  auto buckets = DownsampleTimeline(TimelineOf({3, 1, 4, 1, 5}), 10);
  REQUIRE(buckets.size() == 5);
  for (size_t i = 0; i < 5; ++i) {
    CHECK(buckets[i].begin == i);
    CHECK(buckets[i].end == i + 1);
    CHECK(buckets[i].kept == i);
  }
  CHECK(DownsampleTimeline({}, 10).empty());
}

TEST_CASE("the peak survives downsampling", "[report]") {
  // A sawtooth of 100003 points (a prime, so buckets are uneven) with one spike that is not on
  // a bucket boundary and is only 1 byte above the sawtooth's top.
  const size_t n = 100003;
  const size_t spike = 77777;
  std::vector<int64_t> live(n);
  for (size_t i = 0; i < n; ++i) live[i] = static_cast<int64_t>(i % 997);
  live[spike] = 997;
  auto buckets = DownsampleTimeline(TimelineOf(live), 1000);
  REQUIRE(buckets.size() == 1000);
  // The buckets tile [0, n) in order.
  CHECK(buckets.front().begin == 0);
  CHECK(buckets.back().end == n);
  size_t spike_buckets = 0;
  for (size_t b = 0; b < buckets.size(); ++b) {
    if (b > 0) CHECK(buckets[b].begin == buckets[b - 1].end);
    CHECK(buckets[b].kept >= buckets[b].begin);
    CHECK(buckets[b].kept < buckets[b].end);
    if (buckets[b].kept == spike) ++spike_buckets;
  }
  CHECK(spike_buckets == 1);
}

}  // namespace
}  // namespace memplan
