// The ATen ops a torch >= 2.4 selective-checkpoint policy recomputes for a node-level plan
// (analyzer/config_export/selective_recompute.h), and the registry's table of ATen names
// (graph/ops/aten_ops.h).

#include <catch2/catch.hpp>

#include <string>
#include <vector>

#include "analyzer/config_export/selective_recompute.h"
#include "analyzer/recompute/checkpoint_modules.h"
#include "graph/ops/aten_ops.h"
#include "graph/ops/op_registry.h"

namespace memplan {
namespace {

TEST_CASE("OpTypeOfNodeName strips scopes and the exporter's index suffix", "[export]") {
  CHECK(OpTypeOfNodeName("/h.0/attn/MatMul_1") == "MatMul");
  CHECK(OpTypeOfNodeName("/fc1/Gemm") == "Gemm");
  CHECK(OpTypeOfNodeName("Relu_3") == "Relu");
  CHECK(OpTypeOfNodeName("/blocks.0/act/Gelu") == "Gelu");
  // Not an index suffix: kept whole.
  CHECK(OpTypeOfNodeName("/x/Foo_bar") == "Foo_bar");
  CHECK(OpTypeOfNodeName("/x/Foo_") == "Foo_");
}

TEST_CASE("Every op type with ATen names is a registered op", "[export][registry]") {
  const OpRegistry& registry = OpRegistry::Get();
  for (std::string_view op : OnnxOpsWithAtenOps()) {
    INFO(op);
    CHECK(registry.Find(op) != nullptr);
    CHECK_FALSE(AtenOpsOfOnnxOp(op).empty());
  }
  CHECK(AtenOpsOfOnnxOp("NoSuchOp").empty());
}

TEST_CASE("SelectiveRecomputeOf lists each module's ATen ops once, in plan order", "[export]") {
  // h.0 recomputes its LayerNorm and two attention MatMuls; h.1 its GELU, a Relu and a node of
  // an op with no ATen name; "/Flatten" has no module scope at all.
  CheckpointModules modules = GroupRecomputeByModule(
      {"/h.0/ln_1/LayerNormalization", "/h.0/attn/MatMul", "/h.0/attn/MatMul_1",
       "/h.1/mlp/act/Gelu", "/h.1/mlp/Relu_2", "/h.1/mlp/Custom", "/Flatten"});
  std::vector<SelectiveModule> selective = SelectiveRecomputeOf(modules, {});
  REQUIRE(selective.size() == 2);
  CHECK(selective[0].module_path == "h.0");
  // LayerNormalization -> native_layer_norm; MatMul -> mm, bmm, addmm (twice, listed once).
  CHECK(selective[0].aten_ops ==
        std::vector<std::string>{"aten.native_layer_norm", "aten.mm", "aten.bmm", "aten.addmm"});
  CHECK(selective[0].unmapped_nodes.empty());
  CHECK(selective[1].module_path == "h.1");
  CHECK(selective[1].aten_ops == std::vector<std::string>{"aten.gelu", "aten.relu"});
  CHECK(selective[1].unmapped_nodes == std::vector<std::string>{"/h.1/mlp/Custom"});
}

TEST_CASE("A recorded op type names a node the exporter named after its FX op", "[export]") {
  // The dynamo exporter's names (scoped at import): the Linear's Gemm is "node_linear_1", which
  // no ONNX op type reads from; plan.recompute_op_types records it. The fused GELU keeps "Gelu".
  CheckpointModules modules = GroupRecomputeByModule(
      {"/blocks.0/fc1/node_linear_1", "/blocks.0/act/Gelu", "/head/node_linear_9"});
  const std::map<std::string, std::string> op_types = {{"/blocks.0/fc1/node_linear_1", "Gemm"},
                                                       {"/head/node_linear_9", "Gemm"}};
  std::vector<SelectiveModule> selective = SelectiveRecomputeOf(modules, op_types);
  REQUIRE(selective.size() == 2);
  CHECK(selective[0].aten_ops == std::vector<std::string>{"aten.addmm", "aten.mm", "aten.gelu"});
  CHECK(selective[1].aten_ops == std::vector<std::string>{"aten.addmm", "aten.mm"});
  // Without the record the FX name reads as op "node_linear", which has no ATen op.
  CHECK(SelectiveRecomputeOf(modules, {})[1].unmapped_nodes ==
        std::vector<std::string>{"/head/node_linear_9"});
}

}  // namespace
}  // namespace memplan
