// `memplan explain`'s breakdown on a snapshot written by hand in PyTorch's schema: which blocks
// are live at the OOM, their categories by the frames rule of snapshot_breakdown.h, and the
// cached-but-free bytes, each worked out below.

#include <catch2/catch.hpp>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "analyzer/simulation/memory_snapshot.h"
#include "analyzer/simulation/snapshot_breakdown.h"
#include "analyzer/simulation/snapshot_replay.h"

namespace memplan {
namespace {

constexpr int64_t kMiB = 1 << 20;
constexpr int64_t kA = int64_t{0x7f0000000000};

nlohmann::json Event(const char* action, int64_t addr, int64_t size, std::vector<int> frames) {
  return nlohmann::json::array({action, addr, size, 0, nlohmann::json(frames)});
}

TEST_CASE("explain: live blocks at the OOM by the frames that allocated them", "[replay]") {
  const nlohmann::json frames = nlohmann::json::array({
      nlohmann::json::array({"/venv/lib/torch/nn/modules/module.py", 1340, "_apply"}),
      nlohmann::json::array({"/venv/lib/torch/optim/adam.py", 170, "_init_group"}),
      nlohmann::json::array({"/venv/lib/torch/autograd/__init__.py", 353, "backward"}),
      nlohmann::json::array({"train.py", 40, "forward"}),
  });
  // One 20 MiB segment: parameters 4 MiB, optimizer state 4 MiB, a backward block 2 MiB (freed
  // before the OOM), an activation of 1 MiB + 1 B (a 1,049,088 B block), 100 B with no frames.
  const int64_t act = kMiB + 1;
  const nlohmann::json events = nlohmann::json::array({
      Event("segment_alloc", kA, 20 * kMiB, {}),
      Event("alloc", kA, 4 * kMiB, {0}),
      Event("alloc", kA + 4 * kMiB, 4 * kMiB, {1, 3}),
      Event("alloc", kA + 8 * kMiB, 2 * kMiB, {2, 3}),
      Event("alloc", kA + 10 * kMiB, act, {3}),
      Event("alloc", kA + 10 * kMiB + 1049088, 100, {}),
      Event("free_completed", kA + 8 * kMiB, 2 * kMiB, {2}),
      Event("oom", 0, 30 * kMiB, {3}),
  });
  const nlohmann::json document = {
      {"schema", "memplan-snapshot/1"},
      {"device", 0},
      {"frames", frames},
      {"segments", nlohmann::json::array({{{"address", kA},
                                           {"total_size", 20 * kMiB},
                                           {"stream", 0},
                                           {"segment_type", "large"},
                                           {"blocks", nlohmann::json::array()}}})},
      {"events", events}};
  Expected<MemorySnapshot> snapshot = ParseMemorySnapshot(document);
  REQUIRE(snapshot.ok());
  Expected<SnapshotReplayResult> replay = ReplaySnapshot(*snapshot);
  REQUIRE(replay.ok());
  REQUIRE(replay->ooms.size() == 1);
  CHECK(replay->ooms[0].event == 7);
  CHECK(replay->ooms[0].snapshot_reserved == 20 * kMiB);

  Expected<SnapshotBreakdown> b =
      BreakdownAt(*snapshot, replay->ooms[0].event, replay->ooms[0].snapshot_reserved);
  REQUIRE(b.ok());
  CHECK(b->at_oom);
  CHECK(b->oom_request == 30 * kMiB);
  auto bytes = [&](SnapshotCategory c) { return b->by_category[static_cast<int>(c)]; };
  CHECK(bytes(SnapshotCategory::kParameters) == 4 * kMiB);
  CHECK(bytes(SnapshotCategory::kOptimizerState) == 4 * kMiB);  // torch/optim wins over train.py
  CHECK(bytes(SnapshotCategory::kBackward) == 0);               // freed before the OOM
  CHECK(bytes(SnapshotCategory::kActivations) == act);
  CHECK(bytes(SnapshotCategory::kUnattributed) == 100);
  CHECK(b->live_bytes == 8 * kMiB + act + 100);
  // Rounded to 512 B: 8 MiB + 1,049,088 + 512; cached but free: 20 MiB less that.
  CHECK(b->rounded_bytes == 8 * kMiB + 1049088 + 512);
  CHECK(b->cached_free == 20 * kMiB - (8 * kMiB + 1049088 + 512));
  REQUIRE(b->largest.size() == 4);
  CHECK(b->largest[0].address == kA);  // two 4 MiB blocks: the lower address first
  CHECK(b->largest[1].address == kA + 4 * kMiB);
  CHECK(b->largest[2].size == act);
  CHECK(b->largest[3].size == 100);

  // At the start of the trace nothing is live; an event past the end is refused.
  Expected<SnapshotBreakdown> start = BreakdownAt(*snapshot, -1, 0);
  REQUIRE(start.ok());
  CHECK(start->live_bytes == 0);
  CHECK_FALSE(BreakdownAt(*snapshot, 8, 0).ok());
}

}  // namespace
}  // namespace memplan
