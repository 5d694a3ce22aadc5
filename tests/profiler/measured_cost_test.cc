// `analyze --profile`'s mechanism: measured per-node times (read from profile.json) replace the
// cost model's roofline for the nodes they name, and only for those.

#include <catch2/catch.hpp>

#include "analyzer/cost/cost_model.h"
#include "analyzer/cost/gpu_specs.h"
#include "graph/onnx_import.h"
#include "profiler/profile_json.h"
#include "tests/test_paths.h"

namespace memplan {
namespace {

Graph TinyMlp() {
  auto graph = ImportOnnxModel(memplan::testing::FixturesDir() + "/tiny_mlp.onnx");
  MEMPLAN_CHECK(graph.ok());
  return std::move(*graph);
}

Bindings BatchOf(const Graph& graph, int64_t batch) {
  Bindings bindings(&graph.symbols());
  bindings.Bind(*graph.batch_symbol(), batch);
  return bindings;
}

const NodeTime& TimeOf(const Graph& graph, const std::vector<NodeTime>& times,
                       const std::string& name) {
  for (size_t n = 0; n < graph.num_nodes(); ++n)
    if (graph.node(NodeId(n)).name == name) return times[n];
  FAIL("no node " << name);
  return times.front();
}

TEST_CASE("measured node times replace the roofline for the nodes they name", "[profiler]") {
  const Graph graph = TinyMlp();
  auto gpu = ResolveGpu("A100-80GB");
  REQUIRE(gpu.ok());
  const Bindings bindings = BatchOf(graph, 4);
  auto estimated = EstimateNodeTimes(graph, *gpu, bindings, {});
  REQUIRE(estimated.ok());

  CostModelOptions options;
  options.measured["fc1"] = MeasuredNodeTime{1.5e-3, 2.5e-3, true};
  options.measured["relu"] = MeasuredNodeTime{4e-6, 0.0, false};  // backward not seen
  auto measured = EstimateNodeTimes(graph, *gpu, bindings, {}, options);
  REQUIRE(measured.ok());

  const NodeTime& fc1 = TimeOf(graph, *measured, "fc1");
  CHECK(fc1.measured);
  CHECK(fc1.forward_seconds == 1.5e-3);
  CHECK(fc1.backward_seconds == 2.5e-3);
  const NodeTime& relu = TimeOf(graph, *measured, "relu");
  CHECK(relu.forward_seconds == 4e-6);
  // The roofline backward stays where the profile saw none.
  CHECK(relu.backward_seconds == TimeOf(graph, *estimated, "relu").backward_seconds);
  // Nodes without a measurement keep the roofline exactly.
  const NodeTime& fc2 = TimeOf(graph, *measured, "fc2");
  CHECK_FALSE(fc2.measured);
  CHECK(fc2.forward_seconds == TimeOf(graph, *estimated, "fc2").forward_seconds);
  CHECK(fc2.backward_seconds == TimeOf(graph, *estimated, "fc2").backward_seconds);
}

TEST_CASE("a profile's nodes become cost-model measurements", "[profiler]") {
  const nlohmann::json document = {{"schema", "memplan-profile/1"},
                                   {"model", "tiny_mlp.onnx"},
                                   {"device", "test"},
                                   {"device_peak_bytes", 100},
                                   {"baseline_bytes", 0},
                                   {"allocator_bytes_at_peak", 100},
                                   {"library_bytes_at_peak", 0},
                                   {"allocator_peak_bytes", 100},
                                   {"activation_bytes", 40},
                                   {"device_seconds", 0.5},
                                   {"unattributed_seconds", 0.0},
                                   {"dropped_records", 0},
                                   {"nodes",
                                    {{{"name", "fc1"},
                                      {"forward_seconds", 1e-5},
                                      {"backward_seconds", 2e-5},
                                      {"recompute_seconds", 0.0},
                                      {"forward_runs", 4},
                                      {"backward_runs", 4},
                                      {"recompute_runs", 0},
                                      {"workspace_bytes", 0},
                                      {"activation_bytes", 64}},
                                     {{"name", "relu"},
                                      {"forward_seconds", 3e-6},
                                      {"backward_seconds", 0.0},
                                      {"recompute_seconds", 0.0},
                                      {"forward_runs", 4},
                                      {"backward_runs", 0},
                                      {"recompute_runs", 0},
                                      {"workspace_bytes", 0},
                                      {"activation_bytes", 0}}}}};
  auto profile = profiler::ParseProfile(document, "test");
  if (!profile.ok()) FAIL(profile.error().message);
  MeasuredNodeTimes measured = profiler::ToMeasuredNodeTimes(*profile);
  REQUIRE(measured.size() == 2);
  CHECK(measured["fc1"].forward_seconds == 1e-5);
  CHECK(measured["fc1"].backward_seconds == 2e-5);
  CHECK(measured["fc1"].has_backward);
  CHECK(measured["relu"].forward_seconds == 3e-6);
  CHECK_FALSE(measured["relu"].has_backward);
}

}  // namespace
}  // namespace memplan
