// plan.lora read back from a graph LoRA rewrote: the rank, alpha and the modules a training
// script must adapt, named as PEFT names them. Every expectation follows from the graph built
// here (weight names, the regex given), not from memplan's output.

#include <catch2/catch.hpp>

#include <string>
#include <vector>

#include "analyzer/report/lora_plan_report.h"
#include "graph/lora_adapters.h"
#include "tests/analyzer/derivation/program_test_graphs.h"

namespace memplan {
namespace {

using testing::TestGraph;

// Two blocks h.0 and h.1, each x -> q_proj -> v_proj -> fc; q_proj's weight keeps its torch name,
// v_proj's is renamed by the exporter (onnx::MatMul_N) and its node carries the module scope.
TestGraph TwoBlocks() {
  TestGraph t;
  ValueId x = t.Input("x", {t.B(), 8});
  for (int block = 0; block < 2; ++block) {
    const std::string h = "h." + std::to_string(block);
    ValueId q = t.Param(h + ".attn.q_proj.weight", {8, 8});
    ValueId v = t.Param("onnx::MatMul_" + std::to_string(10 + block), {8, 8});
    ValueId f = t.Param(h + ".mlp.fc.weight", {8, 8});
    x = t.Op("MatMul", "/" + h + "/attn/q_proj/MatMul", {x, q}, h + "/q", {t.B(), 8});
    x = t.Op("MatMul", "/" + h + "/attn/v_proj/MatMul", {x, v}, h + "/v", {t.B(), 8});
    x = t.Op("MatMul", "/" + h + "/mlp/fc/MatMul", {x, f}, h + "/f", {t.B(), 8});
  }
  t.Output(x);
  return t;
}

TEST_CASE("No adapters: no plan.lora", "[report][lora]") {
  TestGraph t = TwoBlocks();
  CHECK_FALSE(LoraPlanReportOf(t.graph).has_value());
}

TEST_CASE("plan.lora names every adapted module, PEFT gets their last names when exact",
          "[report][lora]") {
  TestGraph t = TwoBlocks();
  // q_proj by weight name, v_proj by its node's name (the weight is onnx::MatMul_N).
  REQUIRE(InsertLoraAdapters(t.graph, LoraOptions{4, "q_proj|v_proj", true}).ok());
  std::optional<LoraPlanReport> lora = LoraPlanReportOf(t.graph);
  REQUIRE(lora.has_value());
  CHECK(lora->rank == 4);
  CHECK(lora->alpha == 4);  // memplan's adapters have scaling alpha / r = 1
  CHECK(lora->dropout == 0.0);
  CHECK(lora->target_modules == std::vector<std::string>{"h.0.attn.q_proj", "h.0.attn.v_proj",
                                                         "h.1.attn.q_proj", "h.1.attn.v_proj"});
  // No other linear layer is named q_proj or v_proj (fc is not): the last names select exactly.
  CHECK(lora->peft_target_modules == std::vector<std::string>{"q_proj", "v_proj"});
}

TEST_CASE("plan.lora keeps full module paths when a last name would select more",
          "[report][lora]") {
  TestGraph t = TwoBlocks();
  REQUIRE(InsertLoraAdapters(t.graph, LoraOptions{2, "^h\\.0\\.attn\\.q_proj", true}).ok());
  std::optional<LoraPlanReport> lora = LoraPlanReportOf(t.graph);
  REQUIRE(lora.has_value());
  CHECK(lora->rank == 2);
  CHECK(lora->target_modules == std::vector<std::string>{"h.0.attn.q_proj"});
  // "q_proj" would also adapt h.1.attn.q_proj, which the plan left alone.
  CHECK(lora->peft_target_modules == std::vector<std::string>{"h.0.attn.q_proj"});
  CHECK(LoraPlanReportJson(*lora).dump() ==
        R"({"rank":2,"alpha":2,"dropout":0.0,"target_modules":["h.0.attn.q_proj"],)"
        R"("peft_target_modules":["h.0.attn.q_proj"]})");
}

}  // namespace
}  // namespace memplan
