// The one plan type (PlanReport): what export and baseline read in process (built once from the
// planner's result, AnalysisReport::plan_report) must be what the one reader of a saved plan reads
// back from `analyze --json`: the file route and the in-process route cannot differ.

#include <catch2/catch.hpp>

#include "analyzer/baseline/memory_result.h"
#include "analyzer/config_export/saved_plan_reader.h"
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
    FillPlanReport(report);
  }
};

TEST_CASE("PlanReport facts are what analyze --json says", "[report]") {
  Analysed a;
  const PlanReport& facts = a.report.plan_report;
  // The options asked for: m = 8, G = 32 -> k = 4.
  CHECK(facts.micro_batch == 8);
  CHECK(facts.accumulation_steps == 4);
  CHECK(facts.precision == Precision::kFp16);
  CHECK(facts.optimizer == OptimizerKind::kMomentum);
  CHECK(facts.optimizer_impl == OptimizerImpl::kForLoop);
  CHECK(facts.zero_grad == ZeroGradMode::kZero);
  CHECK(facts.clip_gradients == true);
  CHECK(facts.model_path == "models/mlp.onnx");
  CHECK_FALSE(facts.recompute_nodes.empty());

  const nlohmann::json json = nlohmann::json::parse(AnalysisToJson(a.report).dump());
  Expected<MemoryResult> memory = MemoryResultFromPlanJson(json);
  REQUIRE(memory.ok());
  CHECK(*memory == facts.memory);
  CHECK(facts.memory.peak_bytes == a.plan.chosen.peak_bytes);

  // The same type by the file route: every field the JSON carries reads back equal.
  Expected<PlanReport> read = ReadExportPlan(json);
  REQUIRE(read.ok());
  CHECK(facts.model_path == read->model_path);
  CHECK(facts.model_name == read->model_name);
  CHECK(facts.micro_batch == read->micro_batch);
  CHECK(facts.accumulation_steps == read->accumulation_steps);
  CHECK(facts.precision == read->precision);
  CHECK(facts.amp_mode == read->amp_mode);
  CHECK(facts.optimizer == read->optimizer);
  CHECK(facts.optimizer_impl == read->optimizer_impl);
  CHECK(json["plan"]["optimizer_impl"] == "for-loop");
  CHECK(facts.zero_grad == read->zero_grad);
  CHECK(facts.clip_gradients == read->clip_gradients);
  CHECK(facts.loss == read->loss);
  CHECK(facts.loss_scaling == read->loss_scaling);
  CHECK(facts.loss_scale == read->loss_scale);
  CHECK(facts.loss_dtype == read->loss_dtype);
  CHECK(facts.recompute_nodes == read->recompute_nodes);
  CHECK(facts.recompute_op_types == read->recompute_op_types);
  CHECK(facts.recompute_unit == read->recompute_unit);
  CHECK(facts.fp16_nodes == read->fp16_nodes);
  CHECK(facts.fp32_nodes == read->fp32_nodes);
  CHECK_FALSE(facts.fp16_nodes.empty());  // the MatMuls are fp16-safe
  CHECK(facts.attention == read->attention);
  CHECK(facts.alloc_conf == read->alloc_conf);
  // What the torchtune export reads (torchtune_export.cc): the same by either route.
  CHECK(facts.parameter_count == read->parameter_count);
  CHECK(facts.parameter_count == json["model"]["parameter_count"].get<int64_t>());
  CHECK(facts.parameter_count == 64 * 32 + 32 * 10);
  CHECK(facts.trainable_parameter_count == read->trainable_parameter_count);
  CHECK(facts.trainable_parameter_count == facts.parameter_count);  // nothing frozen
  CHECK(facts.loss_chunks == read->loss_chunks);
  CHECK(facts.HalfLoss() == read->HalfLoss());
  CHECK(facts.UpcastsLoss() == read->UpcastsLoss());
  CHECK(facts.compile == read->compile);
  CHECK(facts.checkpoints.SegmentCount() == read->checkpoints.SegmentCount());

  // Bindings in symbol order, the batch bound to the micro-batch; the reader keeps the file's.
  REQUIRE(facts.bindings.size() == json["bindings"].size());
  REQUIRE(read->bindings.size() == facts.bindings.size());
  size_t i = 0;
  for (const auto& [name, value] : json["bindings"].items()) {
    CHECK(facts.bindings[i].name == name);
    CHECK(facts.bindings[i].value == value.get<int64_t>());
    CHECK(read->bindings[i].name == name);
    CHECK(read->bindings[i].value == value.get<int64_t>());
    ++i;
  }
}

}  // namespace
}  // namespace memplan
