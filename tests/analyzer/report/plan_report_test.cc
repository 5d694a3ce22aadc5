// The typed PlanReport that export and baseline read in process must be what they would read back
// from `analyze --json`: the file route and the in-process route cannot differ.

#include <catch2/catch.hpp>

#include "analyzer/baseline/memory_result.h"
#include "analyzer/config_export/export_plan.h"
#include "analyzer/cost/gpu_specs.h"
#include "analyzer/planning/joint_search.h"
#include "analyzer/report/analysis_report.h"
#include "analyzer/report/plan_report.h"
#include "tests/analyzer/derivation/program_test_graphs.h"

namespace memplan {
namespace {

using testing::TestGraph;

// x[batch, 64] -> fc1 -> relu -> fc2 -> logits[batch, 10]; fp16 with every node recomputed so
// the recompute and placement lists are not empty.
struct Analysed {
  TestGraph t;
  PlannerOptions options;
  TrainingPlan plan;
  AnalysisReport report;

  Analysed() {
    ValueId x = t.Input("x", {t.B(), Dim(64)});
    ValueId w1 = t.Param("w1", {Dim(64), Dim(32)});
    ValueId w2 = t.Param("w2", {Dim(32), Dim(10)});
    ValueId h = t.Op("MatMul", "fc1", {x, w1}, "h", {t.B(), Dim(32)});
    ValueId r = t.Op("Relu", "relu", {h}, "r", {t.B(), Dim(32)});
    ValueId y = t.Op("MatMul", "fc2", {r, w2}, "y", {t.B(), Dim(10)});
    t.Output(y);
    options.gpu = ResolveGpu("24G").value();
    options.micro_batch = 8;
    options.global_batch = 32;
    options.program.optimizer = OptimizerKind::kMomentum;
    options.program.optimizer_impl = OptimizerImpl::kForLoop;
    options.program.zero_grad = ZeroGradMode::kZero;
    options.program.clip_gradients = true;
    SearchOptions search;
    search.precision = PrecisionChoice::kFp16;
    search.recompute = RecomputeChoice::kAll;
    JointPlan joint = PlanJointly(t.graph, options, search).value();
    plan = std::move(joint.plan);
    options = joint.options_used;
    report.model_path = "models/mlp.onnx";
    report.model_name = "mlp";
    report.graph = &t.graph;
    report.options = &options;
    report.plan = &plan;
    CollectPlanNodeLists(report);
  }
};

TEST_CASE("PlanReport facts are what analyze --json says", "[report]") {
  Analysed a;
  const PlanReport facts = PlanReportOf(a.report);
  // The options asked for: m = 8, G = 32 -> k = 4.
  CHECK(facts.micro_batch == 8);
  CHECK(facts.accumulation_steps == 4);
  CHECK(facts.precision == Precision::kFp16);
  CHECK(facts.optimizer == OptimizerKind::kMomentum);
  CHECK(facts.optimizer_impl == OptimizerImpl::kForLoop);
  CHECK(facts.zero_grad == ZeroGradMode::kZero);
  CHECK(facts.clip_gradients);
  CHECK(facts.model_path == "models/mlp.onnx");

  const nlohmann::json json = nlohmann::json::parse(AnalysisToJson(a.report).dump());
  Expected<MemoryResult> memory = MemoryResultFromPlanJson(json);
  REQUIRE(memory.ok());
  CHECK(*memory == facts.memory);
  CHECK(facts.memory.peak_bytes == a.plan.chosen.peak_bytes);

  Expected<ExportPlan> read = ReadExportPlan(json);
  REQUIRE(read.ok());
  const ExportPlan typed = ExportPlanOf(facts);
  CHECK(typed.model_path == read->model_path);
  CHECK(typed.model_name == read->model_name);
  CHECK(typed.micro_batch == read->micro_batch);
  CHECK(typed.accumulation_steps == read->accumulation_steps);
  CHECK(typed.precision == read->precision);
  CHECK(typed.optimizer == read->optimizer);
  CHECK(typed.optimizer_impl == read->optimizer_impl);
  CHECK(typed.optimizer_impl == OptimizerImpl::kForLoop);
  CHECK(json["plan"]["optimizer_impl"] == "for-loop");
  CHECK(typed.zero_grad_set_to_none == read->zero_grad_set_to_none);
  CHECK(typed.clip_gradients == read->clip_gradients);
  CHECK(typed.recompute_nodes == read->recompute_nodes);
  CHECK_FALSE(typed.recompute_nodes.empty());
  // What the torchtune export reads (torchtune_export.cc): the same by either route.
  CHECK(typed.parameter_count == read->parameter_count);
  CHECK(typed.parameter_count == json["model"]["parameter_count"].get<int64_t>());
  CHECK(typed.trainable_parameter_count == read->trainable_parameter_count);
  CHECK(typed.trainable_parameter_count == typed.parameter_count);  // nothing frozen
  CHECK(typed.loss_chunks == read->loss_chunks);
  CHECK(typed.half_loss == read->half_loss);
  CHECK(typed.compile == read->compile);

  // Bindings in symbol order, the batch bound to the micro-batch.
  REQUIRE(facts.bindings.size() == json["bindings"].size());
  size_t i = 0;
  for (const auto& [name, value] : json["bindings"].items()) {
    CHECK(facts.bindings[i].name == name);
    CHECK(facts.bindings[i].value == value.get<int64_t>());
    ++i;
  }
}

}  // namespace
}  // namespace memplan
