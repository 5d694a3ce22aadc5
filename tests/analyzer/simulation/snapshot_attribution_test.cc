// `memplan explain`'s attribution (analyzer/simulation/snapshot_attribution.h) on a hand-built
// program and trace and a snapshot written by hand: which snapshot blocks match which buffers by
// the rule of size, phase and order, each worked out below.

#include <catch2/catch.hpp>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "analyzer/simulation/memory_snapshot.h"
#include "analyzer/simulation/snapshot_attribution.h"
#include "tests/require_value.h"

namespace memplan {
namespace {

constexpr int64_t kA = int64_t{0x7f0000000000};

// A program of five buffers over four steps (sizes are the trace's, not the buffers'):
//   t0 allocate_parameters  +W 16      (setup)
//   t1 load_micro_batch     +x 64      (forward)
//   t2 forward h            +h 128     (forward)
//   t3 backward h           +g 128 +gW 16   (backward)
// and a trace of setup then two iterations, each: +x +h +g +gW (frees are not matched).
struct Fixture {
  TrainingProgram program;
  WalkTrace trace;
};

Fixture MakeFixture() {
  Fixture f;
  auto add = [&f](const std::string& name, MemoryCategory category) {
    Buffer b;
    b.id = BufferId(f.program.buffers.size());
    b.name = name;
    b.category = category;
    f.program.buffers.push_back(b);
    return b.id;
  };
  const BufferId w = add("W", MemoryCategory::kParameters);
  const BufferId x = add("x", MemoryCategory::kOther);
  const BufferId h = add("h", MemoryCategory::kActivations);
  const BufferId g = add("grad(h)", MemoryCategory::kTransients);
  const BufferId gw = add("grad(W)", MemoryCategory::kGradients);
  auto step = [&f](StepKind kind, const std::string& name) {
    Step s;
    s.kind = kind;
    s.name = name;
    f.program.steps.push_back(s);
  };
  step(StepKind::kAllocateParameters, "parameters");
  step(StepKind::kLoadMicroBatch, "load");
  step(StepKind::kForward, "h");
  step(StepKind::kBackward, "h");
  auto alloc = [&f](LogicalTime t, int iteration, BufferId b, int64_t bytes) {
    WalkEvent e;
    e.at = ExecutionPoint{t, iteration, iteration < 0 ? -1 : 0};
    e.kind = WalkEvent::Kind::kAlloc;
    e.buffer = b;
    e.bytes = bytes;
    f.trace.events.push_back(e);
  };
  alloc(0, -1, w, 16);
  for (int it = 0; it < 2; ++it) {
    alloc(1, it, x, 64);
    alloc(2, it, h, 128);
    alloc(3, it, g, 128);
    alloc(3, it, gw, 16);
  }
  return f;
}

// Frames: 0 the parameters' _apply, 1 the forward, 2 autograd's engine.
nlohmann::json Frames() {
  return nlohmann::json::array({
      nlohmann::json::array({"torch/nn/modules/module.py", 1355, "_apply"}),
      nlohmann::json::array({"train.py", 20, "step"}),
      nlohmann::json::array({"torch/autograd/graph.py", 829, "_engine_run_backward"}),
  });
}

nlohmann::json Event(const char* action, int64_t addr, int64_t size, int frame) {
  return nlohmann::json::array({action, addr, size, 0, nlohmann::json::array({frame})});
}

MemorySnapshot Snapshot(const nlohmann::json& events) {
  const nlohmann::json doc = {{"schema", kMemorySnapshotSchema},
                              {"device", 0},
                              {"frames", Frames()},
                              {"segments", nlohmann::json::array()},
                              {"events", events}};
  return testing::RequireValue(ParseMemorySnapshot(doc));
}

TEST_CASE("attribution: a PyTorch-only forward request does not take a backward buffer",
          "[replay]") {
  const Fixture f = MakeFixture();
  // PyTorch: W, x, h, a forward scratch of 128 B (memplan's forward has no second 128 B; the
  // backward's grad(h) has that size but another phase), then grad(h) and grad(W) in backward.
  const MemorySnapshot s = Snapshot(nlohmann::json::array({
      Event("alloc", kA, 16, 0),
      Event("alloc", kA + 512, 64, 1),
      Event("alloc", kA + 1024, 128, 1),
      Event("alloc", kA + 1536, 128, 1),
      Event("alloc", kA + 2048, 128, 2),
      Event("alloc", kA + 2560, 16, 2),
  }));
  const SnapshotAttribution a = testing::RequireValue(AttributeSnapshot(s, 5, f.program, f.trace));
  CHECK(a.snapshot_allocations == 6);
  CHECK(a.matched_allocations == 5);
  CHECK(a.script_allocations == 9);  // W + 2 x 4
  REQUIRE(a.live.size() == 6);
  CHECK(a.live[3].size == 128);
  CHECK_FALSE(a.live[3].matched_event.has_value());  // the scratch
  REQUIRE(a.live[4].matched_event.has_value());
  CHECK(f.program.buffer(a.live[4].buffer).name == "grad(h)");
  CHECK(a.live[4].step == "backward h");
  // Live bytes by category: W 16 parameters, x 64 other, h 128 activations, grad(h) 128
  // transients, grad(W) 16 gradients; the scratch's 128 unattributed.
  CHECK(a.attributed[MemoryCategory::kParameters] == 16);
  CHECK(a.attributed[MemoryCategory::kOther] == 64);
  CHECK(a.attributed[MemoryCategory::kActivations] == 128);
  CHECK(a.attributed[MemoryCategory::kTransients] == 128);
  CHECK(a.attributed[MemoryCategory::kGradients] == 16);
  CHECK(a.unattributed_bytes == 128);
}

TEST_CASE("attribution: a third iteration matches memplan's last one again", "[replay]") {
  const Fixture f = MakeFixture();
  // Three iterations of x, h, grad(h), grad(W), each freed before the next; the focus is the
  // end. The forward x after the backward grad(W) starts each next iteration: iteration 0 and
  // 1 match memplan's, iteration 2 wraps to memplan's last (iteration 1): all 13 match.
  nlohmann::json events = nlohmann::json::array({Event("alloc", kA, 16, 0)});
  for (int it = 0; it < 3; ++it) {
    const int64_t base = kA + 4096 * (it + 1);
    events.push_back(Event("alloc", base, 64, 1));
    events.push_back(Event("alloc", base + 512, 128, 1));
    events.push_back(Event("alloc", base + 1024, 128, 2));
    events.push_back(Event("alloc", base + 1536, 16, 2));
    if (it < 2)
      for (int64_t off : {0, 512, 1024, 1536})
        events.push_back(Event("free_completed", base + off, 0, 2));
  }
  const MemorySnapshot s = Snapshot(events);
  const int64_t last = static_cast<int64_t>(events.size()) - 1;
  const SnapshotAttribution a =
      testing::RequireValue(AttributeSnapshot(s, last, f.program, f.trace));
  CHECK(a.snapshot_allocations == 13);
  CHECK(a.matched_allocations == 13);
  // Live at the end: W and iteration 2's four blocks, matched to iteration 1's buffers: the
  // trace events 5..8 (W is 0, iteration 0 is 1..4).
  REQUIRE(a.live.size() == 5);
  CHECK(*a.live[0].matched_event == 0);
  CHECK(*a.live[1].matched_event == 5);
  CHECK(*a.live[2].matched_event == 6);
  CHECK(*a.live[3].matched_event == 7);
  CHECK(*a.live[4].matched_event == 8);
}

TEST_CASE("attribution: an unmatched request leaves the cursor, equal sizes go by order",
          "[replay]") {
  const Fixture f = MakeFixture();
  // Backward: a 16 B request first (PyTorch's grad(W) before grad(h)): it matches grad(W) and
  // the cursor passes grad(h), so the following 128 B has no backward buffer left in the
  // iteration: unattributed. A 4 B backward request matches nothing and moves nothing.
  const MemorySnapshot s = Snapshot(nlohmann::json::array({
      Event("alloc", kA, 16, 0),
      Event("alloc", kA + 512, 64, 1),
      Event("alloc", kA + 1024, 128, 1),
      Event("alloc", kA + 1536, 4, 2),
      Event("alloc", kA + 2048, 16, 2),
      Event("alloc", kA + 2560, 128, 2),
  }));
  const SnapshotAttribution a = testing::RequireValue(AttributeSnapshot(s, 5, f.program, f.trace));
  CHECK(a.matched_allocations == 4);
  CHECK_FALSE(a.live[3].matched_event.has_value());
  CHECK(f.program.buffer(a.live[4].buffer).name == "grad(W)");
  CHECK_FALSE(a.live[5].matched_event.has_value());
}

TEST_CASE("attribution: an alloc at a live address is an error", "[replay]") {
  const Fixture f = MakeFixture();
  const MemorySnapshot s = Snapshot(nlohmann::json::array({
      Event("alloc", kA, 16, 0),
      Event("alloc", kA, 16, 0),
  }));
  const std::string error = testing::RequireError(AttributeSnapshot(s, 1, f.program, f.trace));
  CHECK(error.find("events[1]: alloc at an address") != std::string::npos);
}

}  // namespace
}  // namespace memplan
