// The joint search runs the precision placement in every mixed candidate: the program it plans
// computes each node in the placed dtype, --fp32-ops / --fp16-ops change the program (and its
// casts), bad entries are errors, and the analysis JSON carries the per-node placement and the
// loss scaler's bytes. Byte counts are derived by hand in the comments.

#include <catch2/catch.hpp>

#include <utility>

#include "analyzer/cost/gpu_specs.h"
#include "analyzer/planning/joint_search.h"
#include "analyzer/report/analysis_report.h"
#include "tests/analyzer/derivation/program_test_graphs.h"

namespace memplan {
namespace {

using testing::TestGraph;

// x [B,4] fp32 input, W1 and W2 [4,4] parameters, sum loss (testing::MatMulThenSoftmax, then):
//   mm1 = MatMul(x, W1) -> y   fp16-safe
//   sm  = Softmax(y)    -> s   fp32-required
//   mm2 = MatMul(s, W2) -> o   fp16-safe
TestGraph MatMulSoftmaxMatMul() {
  testing::MatMulSoftmax m = testing::MatMulThenSoftmax();
  m.t.Output(m.t.Op("MatMul", "mm2", {m.s, m.w2}, "o", {m.t.B(), 4}));
  return std::move(m.t);
}

// A large GPU and m = 1 fixed, so the plan is the program at one sample.
PlannerOptions OneSample() {
  PlannerOptions options;
  options.gpu = ResolveGpu("24G").value();
  options.allocator = AllocatorKind::kExact;
  options.micro_batch = 1;
  options.program.loss = LossKind::kSum;
  return options;
}

JointPlan Plan(const TestGraph& t, const PlannerOptions& options, PrecisionChoice precision,
               std::vector<std::string> fp32_ops = {}, std::vector<std::string> fp16_ops = {}) {
  SearchOptions search;
  search.precision = precision;
  search.force_fp32 = std::move(fp32_ops);
  search.force_fp16 = std::move(fp16_ops);
  auto joint = PlanJointly(t.graph, options, search);
  REQUIRE(joint.ok());
  return std::move(joint).value();
}

DType ForwardDType(const TrainingPlan& plan, const std::string& node) {
  for (const Step& step : plan.program.steps)
    if (step.kind == StepKind::kForward && step.name == node) return step.compute_dtype;
  FAIL("no forward step " << node);
  return DType::kUndefined;
}

struct Casts {
  std::vector<std::string> names;
  int64_t bytes = 0;
  int64_t held_bytes = 0;
};
Casts CastsOf(const TrainingPlan& plan) {
  Casts casts;
  for (const Buffer& b : plan.program.buffers) {
    if (b.role != BufferRole::kCast) continue;
    casts.names.push_back(b.name);
    casts.bytes += plan.simulation.buffer_bytes.at(b.id.index());
    if (b.held_for_backward) casts.held_bytes += plan.simulation.buffer_bytes.at(b.id.index());
  }
  return casts;
}

TEST_CASE("joint search: the fp16 program runs the placement, casts counted", "[precision]") {
  TestGraph t = MatMulSoftmaxMatMul();
  JointPlan joint = Plan(t, OneSample(), PrecisionChoice::kFp16);
  const TrainingPlan& plan = joint.plan;
  REQUIRE(plan.placement.has_value());
  CHECK(plan.placement->nodes.at(t.NodeNamed("mm1").index()).reason == PlacementReason::kFp16Safe);
  CHECK(plan.placement->nodes.at(t.NodeNamed("sm").index()).reason ==
        PlacementReason::kFp32Required);
  CHECK(ForwardDType(plan, "mm1") == DType::kFloat16);
  CHECK(ForwardDType(plan, "sm") == DType::kFloat32);
  CHECK(ForwardDType(plan, "mm2") == DType::kFloat16);
  // Casts at m = 1:
  //   x -> fp16 for mm1   4 * 2 = 8 B, held (mm1 saves its A operand for W1's gradient)
  //   y -> fp32 for sm    4 * 4 = 16 B, freed after sm (Softmax saves its output)
  //   s -> fp16 for mm2   4 * 2 = 8 B, held (mm2 saves A for W2's gradient)
  //   o -> fp32 for loss  4 * 4 = 16 B, not held (the sum loss saves nothing)
  Casts casts = CastsOf(plan);
  CHECK(casts.names == std::vector<std::string>{"x.float16@mm1", "y.float32@sm", "s.float16@mm2",
                                                "o.float32@loss"});
  CHECK(casts.bytes == 8 + 16 + 8 + 16);
  CHECK(casts.held_bytes == 8 + 8);
}

TEST_CASE("joint search: --fp32-ops MatMul flips every MatMul, no casts left", "[precision]") {
  TestGraph t = MatMulSoftmaxMatMul();
  JointPlan joint = Plan(t, OneSample(), PrecisionChoice::kFp16, {"MatMul"});
  const TrainingPlan& plan = joint.plan;
  CHECK(ForwardDType(plan, "mm1") == DType::kFloat32);
  CHECK(ForwardDType(plan, "mm2") == DType::kFloat32);
  CHECK(ForwardDType(plan, "sm") == DType::kFloat32);
  const NodePlacement& mm1 = plan.placement->nodes.at(t.NodeNamed("mm1").index());
  CHECK(mm1.reason == PlacementReason::kOverride);
  CHECK(mm1.override_entry == "MatMul");
  // Every activation is fp32 from the input to the loss: nothing to cast.
  CHECK(CastsOf(plan).names.empty());
  // The options the plan was made with carry the placement, so re-deriving reproduces it.
  REQUIRE(joint.options_used.program.node_dtype.size() == t.graph.num_nodes());
  CHECK(joint.options_used.program.node_dtype[t.NodeNamed("mm1").index()] == DType::kFloat32);
}

TEST_CASE("joint search: a node-name override changes only that node", "[precision]") {
  TestGraph t = MatMulSoftmaxMatMul();
  JointPlan joint = Plan(t, OneSample(), PrecisionChoice::kBf16, {"mm2"});
  const TrainingPlan& plan = joint.plan;
  CHECK(ForwardDType(plan, "mm1") == DType::kBFloat16);
  CHECK(ForwardDType(plan, "mm2") == DType::kFloat32);
  // x -> bf16 for mm1 (8 B, held) and y -> fp32 for sm (16 B); mm2 reads the fp32 softmax output
  // directly and the loss reads mm2's fp32 output: two casts, 24 B, 8 B held.
  Casts casts = CastsOf(plan);
  CHECK(casts.names == std::vector<std::string>{"x.bfloat16@mm1", "y.float32@sm"});
  CHECK(casts.bytes == 24);
  CHECK(casts.held_bytes == 8);
  // bf16 defaults to no loss scaling.
  CHECK(plan.program.loss_scaling.mode == LossScalingMode::kNone);
}

TEST_CASE("joint search: --fp16-ops forces an fp32-required op down", "[precision]") {
  TestGraph t = MatMulSoftmaxMatMul();
  JointPlan joint = Plan(t, OneSample(), PrecisionChoice::kFp16, {}, {"Softmax"});
  CHECK(ForwardDType(joint.plan, "sm") == DType::kFloat16);
  // mm1, sm and mm2 now form one fp16 chain: the only casts are x into it and o out of it.
  Casts casts = CastsOf(joint.plan);
  CHECK(casts.names == std::vector<std::string>{"x.float16@mm1", "o.float32@loss"});
  CHECK(casts.bytes == 8 + 16);
}

TEST_CASE("joint search: bad override entries are errors naming them", "[precision]") {
  TestGraph t = MatMulSoftmaxMatMul();
  for (PrecisionChoice precision :
       {PrecisionChoice::kFp32, PrecisionChoice::kFp16, PrecisionChoice::kAuto}) {
    SearchOptions search;
    search.precision = precision;
    search.force_fp32 = {"Softmaks"};
    auto joint = PlanJointly(t.graph, OneSample(), search);
    REQUIRE_FALSE(joint.ok());
    CHECK_THAT(joint.error().message, Catch::Contains("--fp32-ops entry 'Softmaks'"));
  }
  SearchOptions both;
  both.precision = PrecisionChoice::kFp16;
  both.force_fp32 = {"mm1"};
  both.force_fp16 = {"mm1"};
  auto joint = PlanJointly(t.graph, OneSample(), both);
  REQUIRE_FALSE(joint.ok());
  CHECK_THAT(joint.error().message, Catch::Contains("'mm1' is in both"));
}

TEST_CASE("fp32 plans carry no placement", "[precision]") {
  TestGraph t = MatMulSoftmaxMatMul();
  JointPlan joint = Plan(t, OneSample(), PrecisionChoice::kFp32, {"MatMul"});
  CHECK_FALSE(joint.plan.placement.has_value());
  CHECK(CastsOf(joint.plan).names.empty());
}

nlohmann::ordered_json AnalysisJson(const TestGraph& t, const JointPlan& joint) {
  AnalysisReport report;
  report.graph = &t.graph;
  report.options = &joint.options_used;
  report.plan = &joint.plan;
  FillPlanReport(report);
  return AnalysisToJson(report);
}

TEST_CASE("analysis JSON: placement per node and loss scaler bytes", "[precision]") {
  TestGraph t = MatMulSoftmaxMatMul();
  PlannerOptions options = OneSample();
  JointPlan dynamic = Plan(t, options, PrecisionChoice::kFp16, {"mm2"});
  nlohmann::ordered_json plan = AnalysisJson(t, dynamic)["plan"];
  CHECK(plan["loss_scaling"] == "dynamic");
  CHECK(plan["loss_scale"] == 65536.0);
  // GradScaler: loss_scale fp32 [] 4 B + growth tracker int32 [] 4 B (setup), found_inf 4 B +
  // inv_scale 4 B (unscale step) = 16 B.
  CHECK(plan["loss_scaler_bytes"] == 16);
  const nlohmann::ordered_json& placement = plan["placement"];
  CHECK(placement["working_dtype"] == "float16");
  CHECK(placement["counts"]["fp16-safe"] == 1);      // mm1
  CHECK(placement["counts"]["fp32-required"] == 1);  // sm
  CHECK(placement["counts"]["override"] == 1);       // mm2
  CHECK(placement["counts"]["follows-inputs"] == 0);
  // Casts as in the bf16 name-override case: x (8 B, held) and y (16 B).
  CHECK(placement["cast_buffers"] == 2);
  CHECK(placement["cast_bytes"] == 24);
  CHECK(placement["cast_bytes_held_for_backward"] == 8);
  REQUIRE(placement["nodes"].size() == 3);
  CHECK(placement["nodes"][2]["name"] == "mm2");
  CHECK(placement["nodes"][2]["op"] == "MatMul");
  CHECK(placement["nodes"][2]["dtype"] == "float32");
  CHECK(placement["nodes"][2]["reason"] == "override");
  CHECK(placement["nodes"][2]["override"] == "mm2");
  CHECK(plan["fp16_ops"] == std::vector<std::string>{"mm1"});
  CHECK(plan["fp32_ops"] == std::vector<std::string>{"sm", "mm2"});

  // A static scale is a host constant: only found_inf (4 B) is on the device.
  options.program.loss_scaling = LossScaling{LossScalingMode::kStatic, 1024.0};
  plan = AnalysisJson(t, Plan(t, options, PrecisionChoice::kFp16))["plan"];
  CHECK(plan["loss_scaling"] == "static");
  CHECK(plan["loss_scale"] == 1024.0);
  CHECK(plan["loss_scaler_bytes"] == 4);

  // fp32: no placement object, no scaling.
  plan = AnalysisJson(t, Plan(t, OneSample(), PrecisionChoice::kFp32))["plan"];
  CHECK_FALSE(plan.contains("placement"));
  CHECK(plan["loss_scaling"] == "none");
  CHECK(plan["loss_scaler_bytes"] == 0);
}

}  // namespace
}  // namespace memplan
