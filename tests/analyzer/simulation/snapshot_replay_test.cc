// `memplan replay` against snapshots written by hand in PyTorch's schema (torch/cuda/memory.py,
// as tools/snapshot_to_json.py converts it). Each trace's segment events follow the rules of
// c10/cuda/CUDACachingAllocator.cpp, worked out in the comments: where the trace obeys them the
// replay finds no divergence; where it does not, the replay names that event.

#include <catch2/catch.hpp>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "analyzer/simulation/memory_snapshot.h"
#include "analyzer/simulation/snapshot_replay.h"

namespace memplan {
namespace {

constexpr int64_t kMiB = 1 << 20;
constexpr int64_t kA = int64_t{0x7f0000000000};  // segment addresses, as cudaMalloc returns them
constexpr int64_t kB = int64_t{0x7f0040000000};
constexpr int64_t kC = int64_t{0x7f0080000000};

nlohmann::json Event(const char* action, int64_t addr, int64_t size, int64_t stream = 0) {
  return nlohmann::json::array({action, addr, size, stream, nlohmann::json::array({0})});
}

nlohmann::json Block(int64_t addr, int64_t size, const char* state) {
  return {{"address", addr},
          {"size", size},
          {"requested_size", size},
          {"state", state},
          {"frames", nlohmann::json::array()}};
}

// The blocks as a vector: a braced list of one json object would be that object, not an array.
nlohmann::json Segment(int64_t addr, int64_t size, const std::vector<nlohmann::json>& blocks,
                       int64_t stream = 0) {
  return {{"address", addr},
          {"total_size", size},
          {"stream", stream},
          {"segment_type", size == 2 * kMiB ? "small" : "large"},
          {"blocks", nlohmann::json(blocks)}};
}

nlohmann::json Snapshot(nlohmann::json segments, nlohmann::json events) {
  return {{"schema", "memplan-snapshot/1"},
          {"device", 0},
          {"frames", nlohmann::json::array({nlohmann::json::array({"train.py", 42, "step"})})},
          {"segments", std::move(segments)},
          {"events", std::move(events)}};
}

SnapshotReplayResult Replay(const nlohmann::json& document) {
  Expected<MemorySnapshot> snapshot = ParseMemorySnapshot(document);
  INFO((snapshot.ok() ? "" : snapshot.error().message));
  REQUIRE(snapshot.ok());
  Expected<SnapshotReplayResult> result = ReplaySnapshot(*snapshot);
  INFO((result.ok() ? "" : result.error().message));
  REQUIRE(result.ok());
  return *result;
}

TEST_CASE("replay: a trace that follows the allocator's rules does not diverge", "[replay]") {
  // 5 MiB (1-10 MiB) opens a 20 MiB segment (kLargeBuffer) at A; the second 5 MiB is split off
  // its 15 MiB remainder. The first is freed: free blocks 5 MiB and 10 MiB. 12 MiB (>= 10 MiB)
  // fits neither and opens a segment of 12 MiB (rounded to 2 MiB) at B. 100 B is a 512 B block
  // of a 2 MiB small segment at C. Reserved: 20 + 12 + 2 = 34 MiB.
  const nlohmann::json events = nlohmann::json::array(
      {Event("segment_alloc", kA, 20 * kMiB), Event("alloc", kA, 5 * kMiB),
       Event("alloc", kA + 5 * kMiB, 5 * kMiB), Event("free_requested", kA, 5 * kMiB),
       Event("free_completed", kA, 5 * kMiB), Event("segment_alloc", kB, 12 * kMiB),
       Event("alloc", kB, 12 * kMiB), Event("segment_alloc", kC, 2 * kMiB),
       Event("alloc", kC, 100)});
  const nlohmann::json segments = nlohmann::json::array(
      {Segment(kA, 20 * kMiB,
               {Block(kA, 5 * kMiB, "inactive"), Block(kA + 5 * kMiB, 5 * kMiB, "active_allocated"),
                Block(kA + 10 * kMiB, 10 * kMiB, "inactive")}),
       Segment(kB, 12 * kMiB, {Block(kB, 12 * kMiB, "active_allocated")}),
       Segment(kC, 2 * kMiB,
               {Block(kC, 512, "active_allocated"), Block(kC + 512, 2 * kMiB - 512, "inactive")})});
  const SnapshotReplayResult r = Replay(Snapshot(segments, events));
  CHECK_FALSE(r.first_divergence.has_value());
  CHECK(r.divergent_events == 0);
  CHECK(r.allocations == 4);
  CHECK(r.frees == 1);
  CHECK(r.snapshot_start_reserved == 0);
  CHECK(r.snapshot_peak_reserved == 34 * kMiB);
  CHECK(r.model_peak_reserved == 34 * kMiB);
  CHECK(r.snapshot_segments_made == 3);
  CHECK(r.model_segments_made == 3);
  CHECK(r.snapshot_end_segments == std::vector<int64_t>{20 * kMiB, 12 * kMiB, 2 * kMiB});
  CHECK(r.model_end_segments == std::vector<int64_t>{20 * kMiB, 12 * kMiB, 2 * kMiB});
  // Live requested bytes peak after the 12 MiB alloc: 5 + 12 MiB (the 100 B comes later: +100).
  CHECK(r.peak_requested == 17 * kMiB + 100);
  // The model's allocated blocks at the end: 5 MiB + 12 MiB + 512 B (100 B rounded up).
  CHECK(r.model_peak_allocated == 17 * kMiB + 512);
}

TEST_CASE("replay: names the first alloc where PyTorch made a segment the rules would not",
          "[replay]") {
  // The second 5 MiB fits the first segment's 15 MiB remainder: the model makes no segment, the
  // trace shows a second 20 MiB one (event 3), as a run with other allocator settings would.
  const nlohmann::json events =
      nlohmann::json::array({Event("segment_alloc", kA, 20 * kMiB), Event("alloc", kA, 5 * kMiB),
                             Event("segment_alloc", kB, 20 * kMiB), Event("alloc", kB, 5 * kMiB)});
  const nlohmann::json segments =
      nlohmann::json::array({Segment(kA, 20 * kMiB,
                                     {Block(kA, 5 * kMiB, "active_allocated"),
                                      Block(kA + 5 * kMiB, 15 * kMiB, "inactive")}),
                             Segment(kB, 20 * kMiB,
                                     {Block(kB, 5 * kMiB, "active_allocated"),
                                      Block(kB + 5 * kMiB, 15 * kMiB, "inactive")})});
  const SnapshotReplayResult r = Replay(Snapshot(segments, events));
  REQUIRE(r.first_divergence.has_value());
  CHECK(r.first_divergence->event == 3);
  CHECK(r.first_divergence->action == SnapshotAction::kAlloc);
  CHECK(r.first_divergence->size == 5 * kMiB);
  CHECK(r.first_divergence->snapshot_bytes == 20 * kMiB);
  CHECK(r.first_divergence->model_bytes == 0);
  CHECK(r.snapshot_peak_reserved == 40 * kMiB);
  CHECK(r.model_peak_reserved == 20 * kMiB);
}

TEST_CASE("replay: a block is reused only by its own stream", "[replay]") {
  // Stream 0 frees its 5 MiB block; stream 1's 5 MiB request cannot take it (PyTorch's pools
  // compare the stream first) and opens its own 20 MiB segment: 40 MiB, as the trace says.
  const nlohmann::json events = nlohmann::json::array(
      {Event("segment_alloc", kA, 20 * kMiB, 0), Event("alloc", kA, 5 * kMiB, 0),
       Event("free_requested", kA, 5 * kMiB, 0), Event("free_completed", kA, 5 * kMiB, 0),
       Event("segment_alloc", kB, 20 * kMiB, 1), Event("alloc", kB, 5 * kMiB, 1)});
  const nlohmann::json segments =
      nlohmann::json::array({Segment(kA, 20 * kMiB, {Block(kA, 20 * kMiB, "inactive")}, 0),
                             Segment(kB, 20 * kMiB,
                                     {Block(kB, 5 * kMiB, "active_allocated"),
                                      Block(kB + 5 * kMiB, 15 * kMiB, "inactive")},
                                     1)});
  const SnapshotReplayResult r = Replay(Snapshot(segments, events));
  CHECK_FALSE(r.first_divergence.has_value());
  CHECK(r.streams == 2);
  CHECK(r.model_peak_reserved == 40 * kMiB);
}

TEST_CASE("replay: empty_cache's segment_free run releases what the model releases", "[replay]") {
  // Two 12 MiB segments; one block freed; empty_cache releases that whole free segment only.
  const nlohmann::json events = nlohmann::json::array(
      {Event("segment_alloc", kA, 12 * kMiB), Event("alloc", kA, 12 * kMiB),
       Event("segment_alloc", kB, 12 * kMiB), Event("alloc", kB, 12 * kMiB),
       Event("free_requested", kA, 12 * kMiB), Event("free_completed", kA, 12 * kMiB),
       Event("segment_free", kA, 12 * kMiB)});
  const nlohmann::json segments =
      nlohmann::json::array({Segment(kB, 12 * kMiB, {Block(kB, 12 * kMiB, "active_allocated")})});
  const SnapshotReplayResult r = Replay(Snapshot(segments, events));
  CHECK_FALSE(r.first_divergence.has_value());
  CHECK(r.snapshot_end_reserved == 12 * kMiB);
  CHECK(r.model_end_reserved == 12 * kMiB);
  CHECK(r.snapshot_peak_reserved == 24 * kMiB);
}

TEST_CASE("replay: blocks allocated before the trace began are live from the start", "[replay]") {
  // The ring buffer lost the 12 MiB block's alloc and its segment_alloc: its free is the first
  // event, and the final segment (still reserved) says the trace began with 12 MiB reserved.
  const nlohmann::json events =
      nlohmann::json::array({Event("free_requested", kA, 12 * kMiB),
                             Event("free_completed", kA, 12 * kMiB), Event("oom", 0, 80 * kMiB)});
  const nlohmann::json segments =
      nlohmann::json::array({Segment(kA, 12 * kMiB, {Block(kA, 12 * kMiB, "inactive")})});
  const SnapshotReplayResult r = Replay(Snapshot(segments, events));
  CHECK(r.preexisting_blocks == 1);
  CHECK(r.preexisting_bytes == 12 * kMiB);
  CHECK(r.snapshot_start_reserved == 12 * kMiB);
  CHECK(r.model_start_reserved == 12 * kMiB);
  REQUIRE(r.ooms.size() == 1);
  CHECK(r.ooms[0].event == 2);
  CHECK(r.ooms[0].size == 80 * kMiB);
}

TEST_CASE("replay: inconsistent traces are errors", "[replay]") {
  const nlohmann::json events =
      nlohmann::json::array({Event("segment_alloc", kA, 2 * kMiB), Event("alloc", kA, 512),
                             Event("free_completed", kA, 512), Event("free_completed", kA, 512)});
  auto error_of = [](const nlohmann::json& document) {
    Expected<MemorySnapshot> snapshot = ParseMemorySnapshot(document);
    REQUIRE(snapshot.ok());
    Expected<SnapshotReplayResult> replay = ReplaySnapshot(*snapshot);
    REQUIRE_FALSE(replay.ok());
    return replay.error().message;
  };
  // A block freed twice (the final 2 MiB segment is all free).
  const nlohmann::json segment =
      nlohmann::json::array({Segment(kA, 2 * kMiB, {Block(kA, 2 * kMiB, "inactive")})});
  CHECK(error_of(Snapshot(segment, events)).find("events[3]: free_completed at an address") !=
        std::string::npos);
  // The final segments hold nothing, yet the trace made a 2 MiB segment and never freed it.
  CHECK(error_of(Snapshot(nlohmann::json::array(), events)).find("segment_alloc events add up") !=
        std::string::npos);
}

TEST_CASE("snapshot reader: bad documents name the field", "[replay]") {
  const nlohmann::json none = nlohmann::json::array();
  auto error_of = [](const nlohmann::json& document) {
    Expected<MemorySnapshot> s = ParseMemorySnapshot(document);
    REQUIRE_FALSE(s.ok());
    return s.error().message;
  };
  CHECK(error_of(nlohmann::json{{"schema", "other"}}).find("memplan-snapshot/1") !=
        std::string::npos);
  CHECK(error_of(nlohmann::json::array()).find("not a JSON object") != std::string::npos);
  // A size of 2^60 bytes: "huge" is refused before any sum.
  CHECK(error_of(Snapshot(none, nlohmann::json::array({Event("alloc", kA, int64_t{1} << 60)})))
            .find("events[0] size is above 2^50") != std::string::npos);
  CHECK(error_of(Snapshot(none, nlohmann::json::array({Event("alloc", kA, -5)})))
            .find("events[0] size is negative") != std::string::npos);
  CHECK(error_of(Snapshot(none, nlohmann::json::array({Event("resize", kA, 5)})))
            .find("unknown action 'resize'") != std::string::npos);
  nlohmann::json bad_frame = Event("alloc", kA, 5);
  bad_frame[4] = nlohmann::json::array({7});
  CHECK(
      error_of(Snapshot(none, nlohmann::json::array({bad_frame}))).find("frame id out of range") !=
      std::string::npos);
  // Blocks that add up to more than their segment.
  CHECK(error_of(Snapshot(nlohmann::json::array(
                              {Segment(kA, 2 * kMiB, {Block(kA, 3 * kMiB, "inactive")})}),
                          none))
            .find("segments[0]: its blocks add up to more than total_size") != std::string::npos);
}

}  // namespace
}  // namespace memplan
