// Attribution of hand-written activity traces (tests/profiler/recorded_traces.h has the timeline
// every expected number below is derived from).

#include "profiler/attribution.h"

#include <catch2/catch.hpp>

#include "tests/profiler/recorded_traces.h"

namespace memplan::profiler {
namespace {

using testing::Alloc;
using testing::AllocatorCorrelation;
using testing::Kernel;
using testing::Release;
using testing::StepCorrelation;
using testing::TableEntry;

constexpr double kNs = 1e-9;

const StepExecutionProfile& ExecutionOf(const AttributedProfile& p, uint64_t external_id) {
  for (const StepExecutionProfile& s : p.steps) {
    if (s.step.external_id == external_id) return s;
  }
  FAIL("no execution with external id " << external_id);
  return p.steps.front();
}

const NodeProfile& NodeOf(const AttributedProfile& p, const std::string& name) {
  for (const NodeProfile& n : p.nodes) {
    if (n.node == name) return n;
  }
  FAIL("no node " << name);
  return p.nodes.front();
}

TEST_CASE("device peak counts library memory and the baseline", "[profiler]") {
  AttributionOptions options;
  options.baseline_device_bytes = 100000;  // context + modules before the trace
  auto profile = Attribute(testing::TinyTrace(), testing::TinyStepTable(), options);
  REQUIRE(profile.ok());
  // Peak at t=310: A 1000 + B 4000 + W 512 + C 4000 + S 256 = 9768 live, plus the baseline.
  CHECK(profile->device_peak_bytes == 109768);
  CHECK(profile->device_peak_ns == 310);
  CHECK(profile->baseline_bytes == 100000);
  CHECK(profile->allocator_bytes_at_peak == 9256);  // 9768 - the 512 B library workspace
  CHECK(profile->library_bytes_at_peak == 512);
  CHECK(profile->allocator_peak_bytes == 9256);
  CHECK(profile->dropped_records == 0);
}

TEST_CASE("activation memory is forward allocator memory live at backward", "[profiler]") {
  auto profile = Attribute(testing::TinyTrace(), testing::TinyStepTable());
  REQUIRE(profile.ok());
  // Just before t=500 (the first record of relu's backward) live are A (load, not forward),
  // W (forward but library), C 4000 (relu) and L 4 (loss): 4000 + 4 = 4004.
  CHECK(profile->activation_bytes == 4004);
  CHECK(NodeOf(*profile, "relu").activation_bytes == 4000);
  CHECK(NodeOf(*profile, "fc1").activation_bytes == 0);  // B was freed at t=330, in forward
}

TEST_CASE("per-step memory and workspace", "[profiler]") {
  auto profile = Attribute(testing::TinyTrace(), testing::TinyStepTable());
  REQUIRE(profile.ok());
  REQUIRE(profile->steps.size() == 7);
  CHECK(ExecutionOf(*profile, 1).allocated_bytes == 1000);  // A (the pinned buffer is host)
  CHECK(ExecutionOf(*profile, 2).allocated_bytes == 4512);  // B + W
  CHECK(ExecutionOf(*profile, 3).allocated_bytes == 4256);  // C + S
  CHECK(ExecutionOf(*profile, 3).freed_bytes == 4256);      // S + B
  CHECK(ExecutionOf(*profile, 5).allocated_bytes == 4000);  // G
  CHECK(ExecutionOf(*profile, 5).freed_bytes == 4004);      // C + L
  CHECK(ExecutionOf(*profile, 6).freed_bytes == 5000);      // G + A
  // Workspace: fc1's library W never freed (512), relu's S allocated and freed in-step (256);
  // B is fc1's output freed by relu, so it is scratch of neither.
  CHECK(ExecutionOf(*profile, 2).workspace_bytes == 512);
  CHECK(ExecutionOf(*profile, 3).workspace_bytes == 256);
  CHECK(ExecutionOf(*profile, 5).workspace_bytes == 0);
  CHECK(NodeOf(*profile, "fc1").workspace_bytes == 512);
  CHECK(NodeOf(*profile, "relu").workspace_bytes == 256);
}

TEST_CASE("kernel, memcpy and memset time per step and node", "[profiler]") {
  auto profile = Attribute(testing::TinyTrace(), testing::TinyStepTable());
  REQUIRE(profile.ok());
  CHECK(ExecutionOf(*profile, 1).device_seconds == Approx(50 * kNs));   // the memcpy
  CHECK(ExecutionOf(*profile, 5).device_seconds == Approx(160 * kNs));  // 150 kernel + 10 memset
  CHECK(ExecutionOf(*profile, 5).kernels == 1);
  CHECK(ExecutionOf(*profile, 6).device_seconds == Approx(1100 * kNs));  // 900 + 200
  CHECK(ExecutionOf(*profile, 6).kernels == 2);
  CHECK(ExecutionOf(*profile, 4).device_seconds == 0);
  // 50 + 600 + 100 + 160 + 1100 + 100 + 50 (stray) = 2160 ns in all; the stray 50 unattributed.
  CHECK(profile->device_seconds == Approx(2160 * kNs));
  CHECK(profile->unattributed_seconds == Approx(50 * kNs));

  REQUIRE(profile->nodes.size() == 2);
  CHECK(profile->nodes[0].node == "fc1");  // order of first appearance
  CHECK(profile->nodes[1].node == "relu");
  const NodeProfile& fc1 = NodeOf(*profile, "fc1");
  CHECK(fc1.forward_runs == 1);
  CHECK(fc1.backward_runs == 1);
  CHECK(fc1.forward_seconds == Approx(600 * kNs));
  CHECK(fc1.backward_seconds == Approx(1100 * kNs));
  CHECK(NodeOf(*profile, "relu").backward_seconds == Approx(160 * kNs));
}

// Two micro-batches of one node: fc1 forward takes 600 ns, then 800 ns; its activation is 100 B
// in the first micro-batch and 300 B in the second.
TEST_CASE("node seconds are means over micro-batches, activations a max", "[profiler]") {
  StepTable steps = {TableEntry(1, "fc1", "fc1", StepPhase::kForward, 0),
                     TableEntry(2, "fc1", "fc1", StepPhase::kBackward, 0),
                     TableEntry(3, "fc1", "fc1", StepPhase::kForward, 1),
                     TableEntry(4, "fc1", "fc1", StepPhase::kBackward, 1)};
  ActivityTrace trace;
  trace.memory = {Alloc(0x100, 100, 10, 1), Release(0x100, 100, 20, 2), Alloc(0x100, 300, 30, 3),
                  Release(0x100, 300, 40, 4)};
  trace.kernels = {Kernel("f", 100, 700, 5), Kernel("b", 700, 800, 6), Kernel("f", 800, 1600, 7),
                   Kernel("b", 1600, 1900, 8)};
  const std::pair<uint64_t, uint32_t> step_of_corr[] = {{1, 1}, {2, 2}, {3, 3}, {4, 4},
                                                        {1, 5}, {2, 6}, {3, 7}, {4, 8}};
  for (auto [id, corr] : step_of_corr) trace.correlations.push_back(StepCorrelation(id, corr));
  for (uint32_t corr : {1, 2, 3, 4}) trace.correlations.push_back(AllocatorCorrelation(corr));

  auto profile = Attribute(trace, steps);
  REQUIRE(profile.ok());
  const NodeProfile& fc1 = profile->nodes.at(0);
  CHECK(fc1.forward_runs == 2);
  CHECK(fc1.forward_seconds == Approx(700 * kNs));   // (600 + 800) / 2
  CHECK(fc1.backward_seconds == Approx(200 * kNs));  // (100 + 300) / 2
  CHECK(fc1.activation_bytes == 300);
  CHECK(profile->activation_bytes == 300);
  CHECK(profile->device_peak_bytes == 300);  // the address is reused: never both live
}

TEST_CASE("memory without an external id falls back to the step's host interval", "[profiler]") {
  StepTable steps = {TableEntry(1, "fc1", "fc1", StepPhase::kForward),
                     TableEntry(2, "fc1", "fc1", StepPhase::kBackward)};
  steps[0].host_start_ns = 100;
  steps[0].host_end_ns = 200;
  steps[1].host_start_ns = 200;  // the backward boundary, even before any backward record
  steps[1].host_end_ns = 300;
  ActivityTrace trace;
  // Neither record has an external correlation; both are allocator memory.
  trace.memory = {Alloc(0x100, 64, 150, 1), Alloc(0x200, 32, 190, 2), Release(0x200, 32, 250, 3),
                  Release(0x100, 64, 260, 4)};
  for (uint32_t corr : {1, 2, 3, 4}) trace.correlations.push_back(AllocatorCorrelation(corr));

  auto profile = Attribute(trace, steps);
  REQUIRE(profile.ok());
  CHECK(profile->steps[0].allocated_bytes == 96);  // 64 + 32, by timestamp in [100, 200)
  CHECK(profile->steps[1].freed_bytes == 96);      // t=250 and 260 in [200, 300)
  CHECK(profile->activation_bytes == 96);          // both live at the boundary t=200
  CHECK(profile->nodes.at(0).workspace_bytes == 0);
}

TEST_CASE("inconsistent traces and tables are errors", "[profiler]") {
  SECTION("two entries with one external id") {
    StepTable steps = {TableEntry(1, "a", "a", StepPhase::kForward),
                       TableEntry(1, "b", "b", StepPhase::kForward)};
    auto profile = Attribute(ActivityTrace{}, steps);
    REQUIRE_FALSE(profile.ok());
    CHECK(profile.error().message == "step table: external id 1 names both step 'a' and step 'b'");
  }
  SECTION("an address allocated twice") {
    ActivityTrace trace;
    trace.memory = {Alloc(0xbeef, 8, 1, 1), Alloc(0xbeef, 8, 2, 2)};
    auto profile = Attribute(trace, {});
    REQUIRE_FALSE(profile.ok());
    CHECK(profile.error().message ==
          "activity trace: device address 0xbeef allocated twice without a release in between");
  }
}

TEST_CASE("an empty trace attributes to zeros", "[profiler]") {
  auto profile = Attribute(ActivityTrace{}, testing::TinyStepTable());
  REQUIRE(profile.ok());
  CHECK(profile->device_peak_bytes == 0);
  CHECK(profile->activation_bytes == 0);
  CHECK(profile->nodes.size() == 2);
  CHECK(profile->nodes[0].forward_seconds == 0);
}

}  // namespace
}  // namespace memplan::profiler
