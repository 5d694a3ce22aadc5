// FP16/BF16 placement: the torch.autocast CUDA policy per category (docs/precision.md), the
// follows-inputs neighbour that decided, --fp32-ops / --fp16-ops overrides, their errors, and that
// a derivation given the placement runs exactly the placement.

#include <catch2/catch.hpp>

#include "analyzer/derivation/program_derivation.h"
#include "analyzer/precision/precision_placement.h"
#include "analyzer/program/program_integrity.h"
#include "analyzer/report/placement_report.h"
#include "graph/onnx_import.h"
#include "tests/analyzer/derivation/program_test_graphs.h"
#include "tests/require_value.h"
#include "tests/test_paths.h"

namespace memplan {
namespace {

using testing::TestGraph;

// A transformer-like block on [batch, 8] rows:
//   h  = MatMul(x, W1)             "h_proj"   fp16-safe                 -> fp16
//   p  = Softmax(h)                "attn"     fp32-required             -> fp32
//   a  = Add(p, h)                 "residual" follows: p fp32 > h fp16  -> fp32, decided by p
//   v  = Reshape(a, shape)         "reshape"  view: a's dtype           -> fp32
//   o  = MatMul(v, W2)             "o_proj"   fp16-safe                 -> fp16
//   g  = Relu(o)                   "act"      follows: o                -> fp16
//   n  = LayerNormalization(g, gamma, beta)   "ln"  fp32-required       -> fp32
//   y  = Add(n, bias)              "bias_add" follows: n (bias is a parameter, not counted) -> fp32
//   c  = Cast(y)                   "to_f32"   Cast: keeps graph dtypes  -> not placed
TestGraph TransformerBlock() {
  TestGraph t;
  ValueId x = t.Input("x", {t.B(), 8});
  ValueId w1 = t.Param("W1", {8, 8});
  ValueId w2 = t.Param("W2", {8, 8});
  ValueId gamma = t.Param("gamma", {8});
  ValueId beta = t.Param("beta", {8});
  ValueId bias = t.Param("bias", {8});
  ValueId shape = t.Constant("shape", {2});
  ValueId h = t.Op("MatMul", "h_proj", {x, w1}, "h", {t.B(), 8});
  ValueId p = t.Op("Softmax", "attn", {h}, "p", {t.B(), 8});
  ValueId a = t.Op("Add", "residual", {p, h}, "a", {t.B(), 8});
  ValueId v = t.Op("Reshape", "reshape", {a, shape}, "v", {t.B(), 8});
  ValueId o = t.Op("MatMul", "o_proj", {v, w2}, "o", {t.B(), 8});
  ValueId g = t.Op("Relu", "act", {o}, "g", {t.B(), 8});
  ValueId n = t.Op("LayerNormalization", "ln", {g, gamma, beta}, "n", {t.B(), 8});
  ValueId y = t.Op("Add", "bias_add", {n, bias}, "y", {t.B(), 8});
  t.Output(t.Op("Cast", "to_f32", {y}, "c", {t.B(), 8}));
  return t;
}

const NodePlacement& Placed(const TestGraph& t, const PrecisionPlacement& placement,
                            const std::string& node) {
  return placement.nodes.at(t.NodeNamed(node).index());
}

PrecisionPlacement Place(const TestGraph& t, const PrecisionOptions& options) {
  return testing::RequireValue(PlacePrecision(t.graph, options));
}

std::string ErrorOf(const TestGraph& t, const PrecisionOptions& options) {
  return testing::RequireError(PlacePrecision(t.graph, options));
}

TEST_CASE("placement follows the autocast categories", "[precision]") {
  TestGraph t = TransformerBlock();
  PrecisionOptions options;
  options.mode = Precision::kFp16;
  PrecisionPlacement placement = Place(t, options);
  REQUIRE(placement.nodes.size() == t.graph.num_nodes());

  auto check = [&](const std::string& node, DType dtype, PlacementReason reason) {
    INFO(node);
    const NodePlacement& placed = Placed(t, placement, node);
    CHECK(placed.dtype == dtype);
    CHECK(placed.reason == reason);
    CHECK(placement.node_dtype.at(t.NodeNamed(node).index()) ==
          (reason == PlacementReason::kNotPlaced ? std::nullopt : std::optional<DType>(dtype)));
  };
  check("h_proj", DType::kFloat16, PlacementReason::kFp16Safe);
  check("attn", DType::kFloat32, PlacementReason::kFp32Required);
  check("residual", DType::kFloat32, PlacementReason::kFollowsInputs);
  check("reshape", DType::kFloat32, PlacementReason::kFollowsInputs);
  check("o_proj", DType::kFloat16, PlacementReason::kFp16Safe);
  check("act", DType::kFloat16, PlacementReason::kFollowsInputs);
  check("ln", DType::kFloat32, PlacementReason::kFp32Required);
  check("bias_add", DType::kFloat32, PlacementReason::kFollowsInputs);
  check("to_f32", DType::kUndefined, PlacementReason::kNotPlaced);

  // The neighbour that decided each follows-inputs node.
  auto decided_by = [&](const std::string& node) {
    ValueId v = Placed(t, placement, node).decided_by;
    return v.valid() ? t.graph.value(v).name : std::string("-");
  };
  CHECK(decided_by("residual") == "p");  // the fp32 softmax output beats the fp16 h
  CHECK(decided_by("reshape") == "a");
  CHECK(decided_by("act") == "o");
  CHECK(decided_by("bias_add") == "n");  // the parameter `bias` does not vote

  CHECK(placement.precision == Precision::kFp16);
  CHECK(placement.loss_scaling.mode == LossScalingMode::kDynamic);

  PlacementLists lists = ListPlacedNodes(t.graph, placement);
  CHECK(lists.fp16_ops == std::vector<std::string>{"h_proj", "o_proj", "act"});
  CHECK(lists.fp32_ops ==
        std::vector<std::string>{"attn", "residual", "reshape", "ln", "bias_add"});
}

TEST_CASE("bf16 places the same nodes in bfloat16 and needs no loss scaling", "[precision]") {
  TestGraph t = TransformerBlock();
  PrecisionOptions options;
  options.mode = Precision::kBf16;
  PrecisionPlacement placement = Place(t, options);
  CHECK(Placed(t, placement, "h_proj").dtype == DType::kBFloat16);
  CHECK(Placed(t, placement, "act").dtype == DType::kBFloat16);
  CHECK(Placed(t, placement, "attn").dtype == DType::kFloat32);
  CHECK(placement.loss_scaling.mode == LossScalingMode::kNone);
}

TEST_CASE("fp32 places nothing", "[precision]") {
  TestGraph t = TransformerBlock();
  PrecisionOptions options;
  options.mode = Precision::kFp32;
  options.loss_scaling = LossScaling{LossScalingMode::kDynamic, 65536.0};  // nothing to scale
  PrecisionPlacement placement = Place(t, options);
  for (const NodePlacement& placed : placement.nodes)
    CHECK(placed.reason == PlacementReason::kNotPlaced);
  for (const auto& dtype : placement.node_dtype) CHECK_FALSE(dtype.has_value());
  CHECK(placement.loss_scaling.mode == LossScalingMode::kNone);
  PlacementLists lists = ListPlacedNodes(t.graph, placement);
  CHECK(lists.fp16_ops.empty());
  CHECK(lists.fp32_ops.empty());
}

TEST_CASE("overrides by op type and by node name", "[precision]") {
  TestGraph t = TransformerBlock();
  PrecisionOptions options;
  options.mode = Precision::kFp16;

  SECTION("an op type forces every node of that type") {
    options.force_fp32 = {"MatMul"};
    PrecisionPlacement placement = Place(t, options);
    for (const char* node : {"h_proj", "o_proj"}) {
      INFO(node);
      CHECK(Placed(t, placement, node).dtype == DType::kFloat32);
      CHECK(Placed(t, placement, node).reason == PlacementReason::kOverride);
      CHECK(Placed(t, placement, node).override_entry == "MatMul");
    }
    // Everything downstream is fp32 now: Relu follows the fp32 o.
    CHECK(Placed(t, placement, "act").dtype == DType::kFloat32);
    CHECK(ListPlacedNodes(t.graph, placement).fp16_ops.empty());
  }
  SECTION("a node name forces one node") {
    options.force_fp16 = {"attn"};
    PrecisionPlacement placement = Place(t, options);
    CHECK(Placed(t, placement, "attn").dtype == DType::kFloat16);
    CHECK(Placed(t, placement, "attn").reason == PlacementReason::kOverride);
    // Both residual inputs are fp16 now, so it follows them into fp16 (decided by p, the first).
    CHECK(Placed(t, placement, "residual").dtype == DType::kFloat16);
    CHECK(t.graph.value(Placed(t, placement, "residual").decided_by).name == "p");
    CHECK(PlacementReasonText(t.graph, Placed(t, placement, "attn")) ==
          "override: --fp16-ops attn");
  }
  SECTION("a node name beats an op type") {
    options.force_fp32 = {"MatMul"};
    options.force_fp16 = {"o_proj"};
    PrecisionPlacement placement = Place(t, options);
    CHECK(Placed(t, placement, "h_proj").dtype == DType::kFloat32);
    CHECK(Placed(t, placement, "o_proj").dtype == DType::kFloat16);
    CHECK(Placed(t, placement, "o_proj").override_entry == "o_proj");
  }
  SECTION("--fp16-ops means the working dtype: bfloat16 in bf16 mode") {
    options.mode = Precision::kBf16;
    options.force_fp16 = {"LayerNormalization"};
    PrecisionPlacement placement = Place(t, options);
    CHECK(Placed(t, placement, "ln").dtype == DType::kBFloat16);
  }
}

TEST_CASE("override entries that name nothing are errors", "[precision]") {
  TestGraph t = TransformerBlock();
  PrecisionOptions options;
  options.mode = Precision::kFp16;

  options.force_fp32 = {"Softmax", "NoSuchOp"};
  std::string error = ErrorOf(t, options);
  CHECK(error == "--fp32-ops entry 'NoSuchOp' matches no node name or op type in the graph");

  options.force_fp32 = {"softmax"};
  CHECK(ErrorOf(t, options) ==
        "--fp32-ops entry 'softmax' matches no node name or op type in the graph "
        "(did you mean 'Softmax'?)");

  options.force_fp32 = {};
  options.force_fp16 = {"H_PROJ"};
  CHECK(ErrorOf(t, options) ==
        "--fp16-ops entry 'H_PROJ' matches no node name or op type in the graph "
        "(did you mean 'h_proj'?)");

  options.force_fp32 = {"attn"};
  options.force_fp16 = {"attn"};
  CHECK(ErrorOf(t, options) == "'attn' is in both --fp32-ops and --fp16-ops");

  // A view cannot change dtype, nor can a Cast node: naming only those is an error.
  options.force_fp16 = {};
  options.force_fp32 = {"Reshape"};
  CHECK(ErrorOf(t, options)
            .find("--fp32-ops entry 'Reshape' names only nodes whose dtype is "
                  "not placed") == 0);
  options.force_fp32 = {"to_f32"};
  CHECK(ErrorOf(t, options).find("--fp32-ops entry 'to_f32'") == 0);

  // Typos are caught in fp32 mode too, where nothing else is placed.
  options.mode = Precision::kFp32;
  options.force_fp32 = {"NoSuchOp"};
  CHECK(ErrorOf(t, options).find("'NoSuchOp' matches no node") != std::string::npos);

  options.mode = Precision::kFp16;
  options.force_fp32 = {};
  options.loss_scaling = LossScaling{LossScalingMode::kStatic, 0.0};
  CHECK(ErrorOf(t, options) ==
        "a static loss scale must be a positive finite number, got 0.000000");
}

TEST_CASE("ParseOpList splits comma lists", "[precision]") {
  auto list = ParseOpList(" Softmax , attn_proj,LayerNormalization", "--fp32-ops");
  REQUIRE(list.ok());
  CHECK(*list == std::vector<std::string>{"Softmax", "attn_proj", "LayerNormalization"});
  auto empty = ParseOpList("", "--fp32-ops");
  REQUIRE(empty.ok());
  CHECK(empty->empty());
  auto bad = ParseOpList("Softmax,,MatMul", "--fp16-ops");
  REQUIRE_FALSE(bad.ok());
  CHECK(bad.error().message ==
        "--fp16-ops has an empty entry in 'Softmax,,MatMul'; give op types or node names "
        "separated by commas");
  CHECK_FALSE(ParseOpList("Softmax,", "--fp16-ops").ok());
}

TEST_CASE("placement renders as a table and as JSON", "[precision]") {
  TestGraph t = TransformerBlock();
  PrecisionOptions options;
  options.mode = Precision::kFp16;
  options.force_fp32 = {"act"};
  PrecisionPlacement placement = Place(t, options);
  std::string table = PlacementTable(t.graph, placement);
  CHECK(table ==
        "node      op                  dtype    reason\n"
        "h_proj    MatMul              float16  fp16-safe\n"
        "attn      Softmax             float32  fp32-required\n"
        "residual  Add                 float32  follows-inputs: 'p' is float32\n"
        "reshape   Reshape             float32  follows-inputs: 'a' is float32\n"
        "o_proj    MatMul              float16  fp16-safe\n"
        "act       Relu                float32  override: --fp32-ops act\n"
        "ln        LayerNormalization  float32  fp32-required\n"
        "bias_add  Add                 float32  follows-inputs: 'n' is float32\n");
  nlohmann::ordered_json j = PlacementToJson(t.graph, placement);
  CHECK(j["precision"] == "fp16");
  CHECK(j["loss_scaling"] == "dynamic");
  CHECK(j["loss_scale"] == 65536.0);
  CHECK(j["fp16_ops"] == nlohmann::ordered_json::parse(R"(["h_proj", "o_proj"])"));
  CHECK(j["fp32_ops"] == nlohmann::ordered_json::parse(
                             R"(["attn", "residual", "reshape", "act", "ln", "bias_add"])"));
  CHECK(j["nodes"][2]["decided_by"] == "p");
  CHECK(j["nodes"][5]["override"] == "act");
}

// The placement's node_dtype must make the derivation run what the placement says, and without
// overrides exactly what the derivation's own policy would run.
void CheckDerivationAgrees(const Graph& graph, const PrecisionOptions& options) {
  auto placement = PlacePrecision(graph, options);
  REQUIRE(placement.ok());
  ProgramOptions placed;
  placed.loss = LossKind::kSum;
  ApplyPlacement(*placement, placed);
  auto program = DeriveTrainingProgram(graph, placed);
  REQUIRE(program.ok());
  REQUIRE(VerifyProgram(*program).ok());
  for (const Step& step : program->steps) {
    if (step.kind != StepKind::kForward) continue;
    const NodePlacement& p = placement->nodes.at(step.node.index());
    if (p.reason == PlacementReason::kNotPlaced) continue;
    INFO(step.name);
    CHECK(step.compute_dtype == p.dtype);
  }
  if (options.force_fp16.empty() && options.force_fp32.empty()) {
    ProgramOptions policy;
    policy.loss = LossKind::kSum;
    policy.precision = options.mode;
    auto reference = DeriveTrainingProgram(graph, policy);
    REQUIRE(reference.ok());
    CHECK(ToString(*program) == ToString(*reference));
  }
}

TEST_CASE("the derivation runs the placement", "[precision]") {
  TestGraph t = TransformerBlock();
  PrecisionOptions options;
  for (Precision mode : {Precision::kFp16, Precision::kBf16}) {
    options.mode = mode;
    options.force_fp32 = {};
    CheckDerivationAgrees(t.graph, options);
    options.force_fp32 = {"MatMul"};
    options.force_fp16 = {"ln"};
    CheckDerivationAgrees(t.graph, options);
    options.force_fp16 = {};
  }
}

TEST_CASE("fixture models: placement and the derivation's policy agree", "[precision]") {
  for (const char* file :
       {"gpt_opset17.onnx", "transformer_opset17.onnx", "resnet18_opset17.onnx"}) {
    DYNAMIC_SECTION(file) {
      auto graph = ImportOnnxModel(memplan::testing::FixturesDir() + "/" + file);
      REQUIRE(graph.ok());
      PrecisionOptions options;
      options.mode = Precision::kFp16;
      CheckDerivationAgrees(*graph, options);
      auto placement = PlacePrecision(*graph, options);
      REQUIRE(placement.ok());
      // autocast's lists: every MatMul/Gemm/Conv in fp16, every Softmax in fp32.
      for (const NodePlacement& p : placement->nodes) {
        if (p.reason == PlacementReason::kNotPlaced) continue;  // constant/integer computations
        const Node& node = graph->node(p.node);
        INFO(node.name);
        if (node.op_type == "MatMul" || node.op_type == "Gemm" || node.op_type == "Conv")
          CHECK(p.dtype == DType::kFloat16);
        if (node.op_type == "Softmax") CHECK(p.dtype == DType::kFloat32);
      }
    }
  }
}

}  // namespace
}  // namespace memplan
