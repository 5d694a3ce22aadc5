// bitsandbytes' paged optimizer state (analyzer/program/paged_optimizer_state.h): which states
// are paged, that they leave the device peak, and how much of them the room left keeps resident.

#include <catch2/catch.hpp>

#include "analyzer/program/paged_optimizer_state.h"
#include "tests/analyzer/derivation/program_test_derive.h"
#include "tests/analyzer/derivation/program_test_graphs.h"

namespace memplan {
namespace {

using testing::DeriveVerified;
using testing::SimulateExactly;

// x[B,1000] -> MatMul(W[1000,100]) -> h -> MatMul(V[100,10]) -> y: W has 100,000 elements (paged:
// bitsandbytes pages p.numel() >= 1e5), V has 1,000 (< 4096: 32-bit state, never paged).
struct TwoLayers {
  testing::TestGraph t;
  TwoLayers() {
    ValueId x = t.Input("x", {t.B(), 1000});
    ValueId w = t.Param("W", {1000, 100});
    ValueId v = t.Param("V", {100, 10});
    ValueId h = t.Op("MatMul", "mm1", {x, w}, "h", {t.B(), 100});
    t.Output(t.Op("MatMul", "mm2", {h, v}, "y", {t.B(), 10}));
  }
  ProgramOptions With(OptimizerKind optimizer) const {
    ProgramOptions options;
    options.loss = LossKind::kSum;
    options.optimizer = optimizer;
    return options;
  }
};

TEST_CASE("paged state: state1/state2 of parameters of >= 1e5 elements, outside the device",
          "[paged][derivation]") {
  TwoLayers m;
  TrainingProgram paged = DeriveVerified(m.t.graph, m.With(OptimizerKind::kPagedAdamW8bit));
  TrainingProgram plain = DeriveVerified(m.t.graph, m.With(OptimizerKind::kAdamW8bit));
  int host_states = 0;
  for (const ParameterBuffers& pb : paged.parameters)
    for (size_t i = 0; i < pb.optimizer_states.size(); ++i) {
      const bool is_w = paged.buffer(pb.master).name == "W";
      CHECK(IsPagedOptimizerState(paged, pb, i) == (is_w && i < 2));  // absmax1/2 stay
      host_states += paged.buffer(pb.optimizer_states[i]).on_host() ? 1 : 0;
    }
  CHECK(host_states == 2);
  for (const Buffer& b : plain.buffers) CHECK_FALSE(b.on_host());

  // The same step's device peak without W's state1 and state2: 2 x 100,000 uint8 = 200,000 bytes
  // (the states are persistent, so they are live at the peak of the 8-bit AdamW step).
  const SimulationResult with_pages = SimulateExactly(paged, m.t.Bind(4));
  const SimulationResult on_device = SimulateExactly(plain, m.t.Bind(4));
  CHECK(on_device.peak_bytes - with_pages.peak_bytes == 200000);
}

TEST_CASE("paged state: resident in the room the budget leaves, the rest evicted",
          "[paged][report]") {
  // 200,000 paged bytes, a device peak of 900,000 under a budget of 1,000,000: 100,000 of room,
  // so 100,000 resident and 100,000 evicted, moved out and back each step: 200,000.
  PagedStateResidency r = PagedStateResidencyOf(200000, 900000, 1000000);
  CHECK(r.resident_bytes == 100000);
  CHECK(r.evicted_bytes == 100000);
  CHECK(r.host_traffic_bytes_per_step == 200000);
  // Room for all of it: nothing moves.
  r = PagedStateResidencyOf(200000, 700000, 1000000);
  CHECK(r.resident_bytes == 200000);
  CHECK(r.evicted_bytes == 0);
  CHECK(r.host_traffic_bytes_per_step == 0);
  // A peak over the budget (the plan does not fit): no room, all of it evicted.
  r = PagedStateResidencyOf(200000, 1100000, 1000000);
  CHECK(r.resident_bytes == 0);
  CHECK(r.evicted_bytes == 200000);
}

}  // namespace
}  // namespace memplan
