// Module-granularity recompute (--recompute-unit module): the units found from node scopes, the
// recompute set a checkpointed module becomes, torch.utils.checkpoint's whole-module re-run in
// backward, and the joint search's choice of modules.

#include <catch2/catch.hpp>

#include <string>
#include <vector>

#include "analyzer/config_export/saved_plan_reader.h"
#include "analyzer/derivation/recompute_set.h"
#include "analyzer/planning/joint_search.h"
#include "analyzer/recompute/module_units.h"
#include "analyzer/report/analysis_report.h"
#include "analyzer/report/plan_report.h"
#include "analyzer/simulation/exact_allocator.h"
#include "analyzer/simulation/simulator.h"
#include "tests/analyzer/derivation/program_test_derive.h"
#include "tests/analyzer/derivation/program_test_graphs.h"

namespace memplan {
namespace {

using testing::DeriveVerified;
using testing::SumLossSgd;
using testing::TestGraph;

// x[B,4] -> /stem/Mul (x * w) -> h0, then three blocks k = 0, 1, 2 named as torch.onnx.export
// names a ModuleList element:
//
//   /blocks.k/Relu     p_k = relu(h_k)      saves its output p_k
//   /blocks.k/Sigmoid  q_k = sigmoid(h_k)   saves its output q_k
//   /blocks.k/Add      h_k+1 = p_k + q_k    saves nothing; h_k+1 leaves the block
//
// Every activation is [B, 4] fp32: 16 B bytes.
struct Blocks {
  TestGraph t;
  static constexpr int kBlocks = 3;

  Blocks() {
    ValueId x = t.Input("x", {t.B(), 4});
    ValueId w = t.Param("w", {4});
    ValueId h = t.Op("Mul", "/stem/Mul", {x, w}, "h0", {t.B(), 4});
    for (int k = 0; k < kBlocks; ++k) {
      const std::string scope = "/blocks." + std::to_string(k) + "/";
      const std::string K = std::to_string(k);
      ValueId p = t.Op("Relu", scope + "Relu", {h}, "p" + K, {t.B(), 4});
      ValueId q = t.Op("Sigmoid", scope + "Sigmoid", {h}, "q" + K, {t.B(), 4});
      h = t.Op("Add", scope + "Add", {p, q}, "h" + std::to_string(k + 1), {t.B(), 4});
    }
    t.Output(h);
  }

  std::vector<NodeId> Module(int k) const {
    const std::string scope = "/blocks." + std::to_string(k) + "/";
    return {t.NodeNamed(scope + "Relu"), t.NodeNamed(scope + "Sigmoid"),
            t.NodeNamed(scope + "Add")};
  }

  ProgramOptions Checkpointing(const std::vector<int>& blocks) const {
    ProgramOptions options = SumLossSgd();
    for (int k : blocks) options.recompute_modules.push_back(Module(k));
    return options;
  }

  SimulationResult Simulate(const ProgramOptions& options, int64_t batch) const {
    TrainingProgram program = DeriveVerified(t.graph, options);
    ExactAllocator exact;
    return memplan::Simulate(program, t.Bind(batch), exact, SimulationOptions{}).value();
  }
};

TEST_CASE("module units: the indexed scopes, in forward order, the stem is none", "[recompute]") {
  Blocks b;
  std::vector<CheckpointableModule> units = FindCheckpointableModules(b.t.graph);
  REQUIRE(units.size() == 3);
  for (int k = 0; k < 3; ++k) {
    CHECK(units[static_cast<size_t>(k)].path == "blocks." + std::to_string(k));
    CHECK(units[static_cast<size_t>(k)].nodes == b.Module(k));
  }

  // Names without the exporter's scope form have no unit.
  TestGraph plain;
  ValueId x = plain.Input("x", {plain.B(), 4});
  plain.Output(plain.Op("Relu", "relu_1", {x}, "y", {plain.B(), 4}));
  CHECK(FindCheckpointableModules(plain.graph).empty());
}

TEST_CASE("module order: bytes per second re-run, equal blocks in forward order", "[recompute]") {
  // Ratios 100/1, 300/1, 100/1, 0 (dropped nothing: left out), 50/0 (free: first).
  std::vector<ModuleCheckpointCost> costs = {{100, 1}, {300, 1}, {100, 1}, {0, 1}, {50, 0}};
  CHECK(ModuleCheckpointOrder(costs) == std::vector<size_t>{4, 1, 0, 2});
}

TEST_CASE("a checkpointed module drops all but what leaves it", "[recompute][derivation]") {
  Blocks b;
  // blocks.1: its Add writes h2, which blocks.2 reads: kept. blocks.2: its Add writes the graph
  // output: kept.
  RecomputeSet set = ResolveRecomputeSet(b.t.graph, {}, {b.Module(1), b.Module(2)}).value();
  const std::vector<NodeId> m1 = b.Module(1);
  const std::vector<NodeId> m2 = b.Module(2);
  CHECK(set.nodes == std::vector<NodeId>{m1[0], m1[1], m2[0], m2[1]});
  REQUIRE(set.groups.size() == 2);
  CHECK(set.groups[0] == std::vector<NodeId>{m1[0], m1[1]});
  CHECK(set.group_of[m1[0].index()] == 0);
  CHECK(set.group_of[m2[1].index()] == 1);
  CHECK(set.group_of[m1[2].index()] == -1);

  auto twice = ResolveRecomputeSet(b.t.graph, {}, {b.Module(1), {m1[0]}});
  REQUIRE_FALSE(twice.ok());
  CHECK(twice.error().message ==
        "recompute module lists node '/blocks.1/Relu', which another module (or this one) "
        "already lists");
}

TEST_CASE("checkpointing block k keeps its input instead of its saved tensors",
          "[recompute][simulator]") {
  Blocks b;
  constexpr int64_t kBatch = 8;
  constexpr int64_t kTensor = 16 * kBatch;  // [8, 4] fp32 = 128 bytes
  // Without recompute forward keeps x (the stem Mul's saved input) and p_k, q_k of every block:
  // 7 tensors. h0..h2 are read by no backward step (Relu and Sigmoid save their outputs).
  CHECK(b.Simulate(SumLossSgd(), kBatch).saved_activation_bytes == 7 * kTensor);
  // Checkpointing block k drops p_k and q_k and keeps its input h_k for the re-run: one tensor
  // fewer per block, whichever block it is.
  for (int k = 0; k < 3; ++k)
    CHECK(b.Simulate(b.Checkpointing({k}), kBatch).saved_activation_bytes == 6 * kTensor);
  CHECK(b.Simulate(b.Checkpointing({0, 1}), kBatch).saved_activation_bytes == 5 * kTensor);
  // All three: x, h0, h1, h2.
  CHECK(b.Simulate(b.Checkpointing({0, 1, 2}), kBatch).saved_activation_bytes == 4 * kTensor);
}

// The backward steps of blocks.1 in order: "R name" recompute, "B name" backward.
std::vector<std::string> Block1Backward(const TrainingProgram& program) {
  std::vector<std::string> steps;
  for (const Step& step : program.steps) {
    if (step.name.rfind("/blocks.1/", 0) != 0) continue;
    if (step.kind == StepKind::kRecompute) steps.push_back("R " + step.name);
    if (step.kind == StepKind::kBackward) steps.push_back("B " + step.name);
  }
  return steps;
}

TEST_CASE("a checkpointed module is re-run whole at the first need, as torch does",
          "[recompute][derivation]") {
  Blocks b;
  // torch.utils.checkpoint (use_reentrant=False) re-runs the module's forward when backward first
  // unpacks one of its saved tensors: the Add's backward needs none, Sigmoid's backward needs q1,
  // so both Relu and Sigmoid run again before it, in forward order.
  TrainingProgram module = DeriveVerified(b.t.graph, b.Checkpointing({1}));
  CHECK(Block1Backward(module) ==
        std::vector<std::string>{"B /blocks.1/Add", "R /blocks.1/Relu", "R /blocks.1/Sigmoid",
                                 "B /blocks.1/Sigmoid", "B /blocks.1/Relu"});
  // The same nodes as a node-level set are re-run lazily, each just before its own backward.
  ProgramOptions nodes = SumLossSgd();
  nodes.recompute = {b.Module(1)[0], b.Module(1)[1]};
  TrainingProgram lazy = DeriveVerified(b.t.graph, nodes);
  CHECK(Block1Backward(lazy) == std::vector<std::string>{"B /blocks.1/Add", "R /blocks.1/Sigmoid",
                                                         "B /blocks.1/Sigmoid", "R /blocks.1/Relu",
                                                         "B /blocks.1/Relu"});
}

PlannerOptions ExactPlanner(int64_t budget, int64_t micro_batch) {
  PlannerOptions options;
  options.gpu = ResolveGpu("1G").value();
  options.gpu.memory_bytes = budget;
  options.gpu.context_bytes = 0;
  options.allocator = AllocatorKind::kExact;
  options.micro_batch = micro_batch;
  options.program = SumLossSgd();
  return options;
}

TEST_CASE("module search: the fewest blocks that fit, earliest first", "[recompute][planner]") {
  Blocks b;
  constexpr int64_t kBatch = 64;
  // The peaks of checkpointing the first c blocks, c = 0..3, by the simulator.
  std::vector<int64_t> peaks;
  for (std::vector<int> blocks : std::vector<std::vector<int>>{{}, {0}, {0, 1}, {0, 1, 2}})
    peaks.push_back(b.Simulate(b.Checkpointing(blocks), kBatch).peak_bytes);
  // Forward keeps one tensor fewer per checkpointed block (test above), and the peak is at the
  // start of backward while the earlier blocks' tensors are still held, so blocks 0 and 1 each
  // lower it; checkpointing the last block re-creates its tensors at once and saves nothing.
  REQUIRE(peaks[0] > peaks[1]);
  REQUIRE(peaks[1] > peaks[2]);

  SearchOptions search;
  search.recompute = RecomputeChoice::kOptimal;
  search.recompute_unit = RecomputeUnit::kModule;
  // A budget of exactly the two-block peak: one block does not fit, two do.
  JointPlan two = PlanJointly(b.t.graph, ExactPlanner(peaks[2], kBatch), search).value();
  CHECK(two.plan.feasible);
  CHECK(two.plan.recompute_unit == RecomputeUnit::kModule);
  CHECK(two.plan.checkpoint_modules == std::vector<std::string>{"blocks.0", "blocks.1"});
  CHECK(two.plan.checkpointable_modules == 3);
  CHECK(two.plan.chosen.peak_bytes == peaks[2]);
  // The plan's program is the module program: its recomputed nodes are the blocks' Relu and
  // Sigmoid, not their Adds.
  CHECK(two.plan.program.recomputed ==
        std::vector<NodeId>{b.Module(0)[0], b.Module(0)[1], b.Module(1)[0], b.Module(1)[1]});

  JointPlan one = PlanJointly(b.t.graph, ExactPlanner(peaks[1], kBatch), search).value();
  CHECK(one.plan.checkpoint_modules == std::vector<std::string>{"blocks.0"});
  // Where the micro-batch fits without recompute, optimal recomputes nothing.
  JointPlan none = PlanJointly(b.t.graph, ExactPlanner(peaks[0], kBatch), search).value();
  CHECK(none.plan.checkpoint_modules.empty());
  CHECK(none.plan.program.recomputed.empty());

  // all: every block, what HF's gradient_checkpointing runs.
  search.recompute = RecomputeChoice::kAll;
  JointPlan all = PlanJointly(b.t.graph, ExactPlanner(peaks[0], kBatch), search).value();
  CHECK(all.plan.checkpoint_modules ==
        std::vector<std::string>{"blocks.0", "blocks.1", "blocks.2"});
  CHECK(all.plan.chosen.peak_bytes == peaks[3]);
}

TEST_CASE("a module plan reads back from --json as it is in process", "[recompute][report]") {
  Blocks b;
  SearchOptions search;
  search.recompute = RecomputeChoice::kAll;
  JointPlan joint = PlanJointly(b.t.graph, ExactPlanner(int64_t{1} << 30, 8), search).value();
  AnalysisReport report;
  report.model_path = "blocks.onnx";
  report.model_name = "blocks";
  report.graph = &b.t.graph;
  report.options = &joint.options_used;
  report.plan = &joint.plan;
  FillPlanReport(report);
  const nlohmann::json json = nlohmann::json::parse(AnalysisToJson(report).dump());
  CHECK(json["plan"]["recompute_unit"] == "module");
  CHECK(json["plan"]["recompute_modules"] ==
        nlohmann::json::array({"blocks.0", "blocks.1", "blocks.2"}));
  CHECK(json["plan"]["checkpointable_modules"] == 3);
  // Relu and Sigmoid of each block; the Adds write what leaves the blocks.
  CHECK(json["plan"]["recompute"].size() == 6);

  const PlanReport& typed = report.plan_report;
  const PlanReport read = ReadExportPlan(json).value();
  CHECK(typed.ModuleUnit());
  CHECK(read.ModuleUnit());
  CHECK(typed.recompute_modules == read.recompute_modules);
  CHECK(typed.checkpointable_modules == read.checkpointable_modules);
  REQUIRE(read.checkpoints.modules.size() == 3);
  for (size_t k = 0; k < 3; ++k) {
    CHECK(read.checkpoints.modules[k].module_path == "blocks." + std::to_string(k));
    CHECK(read.checkpoints.modules[k].nodes.size() == 2);
  }
  CHECK(read.checkpoints.unmapped_nodes.empty());
  CHECK(read.ChecksEveryModule());
}

TEST_CASE("recompute unit: auto follows the node names, module needs scopes and no sqrt",
          "[recompute][planner]") {
  Blocks b;
  SearchOptions search;
  search.recompute = RecomputeChoice::kAll;
  // auto on scoped names: module.
  CHECK(PlanJointly(b.t.graph, ExactPlanner(int64_t{1} << 30, 8), search)
            .value()
            .plan.recompute_unit == RecomputeUnit::kModule);
  // sqrt has no module form: auto resolves to node, an explicit module is refused.
  search.recompute = RecomputeChoice::kSqrt;
  CHECK(PlanJointly(b.t.graph, ExactPlanner(int64_t{1} << 30, 8), search)
            .value()
            .plan.recompute_unit == RecomputeUnit::kNode);
  search.recompute_unit = RecomputeUnit::kModule;
  auto sqrt = PlanJointly(b.t.graph, ExactPlanner(int64_t{1} << 30, 8), search);
  REQUIRE_FALSE(sqrt.ok());
  CHECK(sqrt.error().message.find("no module form") != std::string::npos);

  // Names without scopes: auto is node, module is refused while a recompute kind is asked.
  TestGraph plain;
  ValueId x = plain.Input("x", {plain.B(), 4});
  ValueId w = plain.Param("w", {4});
  ValueId h = plain.Op("Mul", "mul", {x, w}, "h", {plain.B(), 4});
  plain.Output(plain.Op("Relu", "relu", {h}, "y", {plain.B(), 4}));
  search.recompute = RecomputeChoice::kAll;
  search.recompute_unit = RecomputeUnit::kAuto;
  CHECK(PlanJointly(plain.graph, ExactPlanner(int64_t{1} << 30, 8), search)
            .value()
            .plan.recompute_unit == RecomputeUnit::kNode);
  search.recompute_unit = RecomputeUnit::kModule;
  auto unscoped = PlanJointly(plain.graph, ExactPlanner(int64_t{1} << 30, 8), search);
  REQUIRE_FALSE(unscoped.ok());
  CHECK(unscoped.error().message.find("module scopes") != std::string::npos);
}

}  // namespace
}  // namespace memplan
