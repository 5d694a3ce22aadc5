// Timing of the recompute planners; hidden by default. Run with:
//   analyzer_tests "[recompute_bench]"
// It prints figures for docs/measurements.md and asserts only that plans fit their budgets.

#include <cstdio>
#include <ctime>
#include <random>
#include <string>

#include <catch2/catch.hpp>

#include "analyzer/recompute/baseline_planners.h"
#include "analyzer/recompute/chain_decomposition.h"
#include "analyzer/recompute/optimal_chain_planner.h"
#include "graph/graph.h"
#include "tests/graph/hand_built_graph.h"

namespace memplan {
namespace {

constexpr int64_t kMiB = 1 << 20;

// Stages shaped like real layers: outputs of 1-64 MiB, saved sets of 0-4 outputs' worth.
Chain LayerLikeChain(int num_stages, std::mt19937& rng) {
  std::uniform_int_distribution<int64_t> out(1, 64), factor(0, 4), tmp(0, 16);
  std::uniform_real_distribution<double> time(1e-4, 5e-3);
  Chain chain;
  chain.input_bytes = 8 * kMiB;
  for (int k = 0; k < num_stages; ++k) {
    ChainStage s;
    s.forward_time = time(rng);
    s.backward_time = 2 * s.forward_time;
    s.output_bytes = out(rng) * kMiB;
    s.saved_bytes = factor(rng) * s.output_bytes;
    s.forward_overhead_bytes = tmp(rng) * kMiB;
    s.backward_overhead_bytes = tmp(rng) * kMiB;
    chain.stages.push_back(s);
  }
  return chain;
}

// CPU time of this process: the build machine is shared, so wall time mostly measures neighbours.
double CpuSeconds(std::clock_t since) {
  return static_cast<double>(std::clock() - since) / CLOCKS_PER_SEC;
}

TEST_CASE("bench: PlanOptimalChain by chain length", "[.bench][recompute_bench]") {
  std::mt19937 rng(1);
  std::printf("%8s %10s %12s %12s %14s %14s\n", "stages", "max/slots", "cpu_s", "added_s",
              "peak_MiB", "budget_MiB");
  for (int n : {100, 300, 1000, 3000, 10000}) {
    const Chain chain = LayerLikeChain(n, rng);
    auto none = PlanNoRecompute(chain);
    auto all = PlanRecomputeAll(chain);
    REQUIRE(none.ok());
    REQUIRE(all.ok());
    // Halfway between the smallest simple schedule and no recompute: a budget that forces choices.
    const int64_t budget = (none->predicted_peak_bytes + all->predicted_peak_bytes) / 2;
    struct Variant {
      const char* label;
      ChainPlannerOptions options;
    };
    std::vector<Variant> variants = {
        {"default", {}}, {"256/4000", {4000, 256}}, {"128/8000", {8000, 128}}};
    if (n <= 1000) variants.push_back({"fine/8000", {kDefaultMemorySlots, 0}});
    for (const Variant& v : variants) {
      const std::clock_t start = std::clock();
      auto plan = PlanOptimalChain(chain, budget, v.options);
      const double seconds = CpuSeconds(start);
      REQUIRE(plan.ok());
      CHECK(plan->predicted_peak_bytes <= budget);
      std::printf("%8d %10s %12.4f %12.4f %14.1f %14.1f\n", n, v.label, seconds, plan->added_time,
                  static_cast<double>(plan->predicted_peak_bytes) / kMiB,
                  static_cast<double>(budget) / kMiB);
    }
  }
}

TEST_CASE("bench: decompose and plan a 2000-node residual graph", "[.bench][recompute_bench]") {
  Graph graph;
  std::vector<int64_t> bytes;
  auto value = [&](const std::string& name, ValueKind kind, int64_t size) {
    Value v;
    v.name = name;
    v.kind = kind;
    bytes.push_back(size);
    return graph.AddValue(std::move(v));
  };
  auto op = [&](const std::string& name, std::vector<ValueId> inputs, int64_t size) {
    ValueId out = value(name + ":out", ValueKind::kIntermediate, size);
    testing::NewNode(graph, name, "Op", std::move(inputs), {out});
    return out;
  };
  ValueId x = value("x", ValueKind::kIntermediate, 16 * kMiB);
  graph.MarkInput(x);
  ValueId h = op("stem", {x, value("w", ValueKind::kParameter, kMiB)}, 32 * kMiB);
  for (int i = 0; i < 400; ++i) {  // 400 blocks x 5 nodes = 2000 nodes
    const std::string p = "/block" + std::to_string(i);
    ValueId a = op(p + "/conv1", {h, value(p + ".w1", ValueKind::kParameter, kMiB)}, 32 * kMiB);
    ValueId r = op(p + "/relu", {a}, 32 * kMiB);
    ValueId c = op(p + "/conv2", {r, value(p + ".w2", ValueKind::kParameter, kMiB)}, 32 * kMiB);
    ValueId s = op(p + "/add", {c, h}, 32 * kMiB);
    h = op(p + "/relu_1", {s}, 32 * kMiB);
  }
  graph.MarkOutput(h);
  ChainCostFunctions costs;
  costs.value_bytes = [&](ValueId v) { return bytes.at(v.index()); };
  costs.forward_time = [](NodeId id) { return 1e-4 * (1 + id.value % 3); };

  const std::clock_t start = std::clock();
  auto decomposition = DecomposeIntoChain(graph, costs);
  const double decompose_seconds = CpuSeconds(start);
  REQUIRE(decomposition.ok());
  auto none = PlanNoRecompute(decomposition->chain);
  REQUIRE(none.ok());
  const int64_t budget = none->predicted_peak_bytes / 4;
  const std::clock_t plan_start = std::clock();
  auto plan = PlanOptimalChain(decomposition->chain, budget);
  const double plan_seconds = CpuSeconds(plan_start);
  REQUIRE(plan.ok());
  auto selection = SelectRecomputeNodes(graph, *decomposition, *plan);
  REQUIRE(selection.ok());
  std::printf(
      "2001 nodes -> %d stages: decompose %.4f cpu-s, plan %.4f cpu-s (budget %.0f MiB = 1/4 of "
      "no-recompute peak), %zu nodes recomputed, %zu checkpoints\n",
      decomposition->chain.num_stages(), decompose_seconds, plan_seconds,
      static_cast<double>(budget) / kMiB, selection->recompute_nodes.size(),
      selection->checkpoint_names.size());
}

}  // namespace
}  // namespace memplan
