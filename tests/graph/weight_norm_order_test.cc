// ReorderWeightNorms (graph/weight_norm_order.h): torch.onnx's TorchScript form of
// torch._weight_norm, Mul(Div(v, ReduceL2(v)), g), becomes ATen's Mul(v, Div(g, ReduceL2(v))).
#include <catch2/catch.hpp>

#include <onnx/onnx_pb.h>

#include <string>

#include "graph/fusion/fusion_set.h"
#include "graph/onnx_import.h"
#include "graph/weight_norm_order.h"
#include "tests/graph/proto_model.h"

namespace memplan {
namespace {

using testing::ProtoModel;
using testing::SetInts;

// nn.utils.weight_norm(nn.Conv1d(2, 4, 3), dim=2) as the TorchScript exporter writes it at
// opset 13: v [4, 2, 3], g [1, 1, 3], the norm over axes 0 and 1.
ProtoModel WeightNormedConv(bool v_is_initializer) {
  ProtoModel m(/*opset=*/13);
  m.Input("x", onnx::TensorProto::FLOAT, {2, 2, 5});
  if (v_is_initializer) {
    m.Initializer("v", onnx::TensorProto::FLOAT, {4, 2, 3});
  } else {
    m.Input("v", onnx::TensorProto::FLOAT, {4, 2, 3});
  }
  m.Initializer("g", onnx::TensorProto::FLOAT, {1, 1, 3});
  SetInts(m.Node("ReduceL2", {"v"}, {"n"}), "axes", {0, 1});
  m.Node("Div", {"v", "n"}, {"d"});
  m.Node("Mul", {"d", "g"}, {"w"});
  m.Node("Conv", {"x", "w"}, {"y"});
  m.ValueInfo("d", onnx::TensorProto::FLOAT, {4, 2, 3});
  m.Output("y", onnx::TensorProto::FLOAT, {{2, 4, 3}});
  return m;
}

TEST_CASE("the TorchScript weight norm is reordered as ATen computes it", "[import][weight_norm]") {
  ProtoModel m = WeightNormedConv(/*v_is_initializer=*/true);
  REQUIRE(ReorderWeightNorms(m.graph()) == 1);
  const auto& g = m.graph();
  const auto& div = g.node(1);
  const auto& mul = g.node(2);
  // q = g / n: g's [1, 1, 3], not v's [4, 2, 3]; w = v * q, the same values.
  CHECK(div.op_type() == "Div");
  CHECK(div.input(0) == "g");
  CHECK(div.input(1) == "n");
  CHECK(div.output(0) == "d_weight_norm_scale");
  CHECK(mul.input(0) == "v");
  CHECK(mul.input(1) == "d_weight_norm_scale");
  CHECK(mul.output(0) == "w");
  // The recorded type of the old quotient is gone with it.
  CHECK(g.value_info_size() == 0);
  // The import infers q's shape from the rewritten nodes.
  const Graph graph = m.Import("weight_norm.onnx");
  bool found = false;
  for (const Value& v : graph.values()) {
    if (v.name != "d_weight_norm_scale") continue;
    found = true;
    REQUIRE(v.shape.known);
    CHECK(v.shape.rank() == 3);
  }
  CHECK(found);
}

TEST_CASE("the weight norm imports as written under --fusions none", "[import][weight_norm]") {
  ImportOptions as_written;
  as_written.fusions = FusionSet::kNone;
  const Graph graph =
      WeightNormedConv(/*v_is_initializer=*/true).Import("weight_norm.onnx", as_written);
  for (const Value& v : graph.values()) CHECK(v.name != "d_weight_norm_scale");
}

TEST_CASE("a norm of an activation is not a weight norm", "[import][weight_norm]") {
  ProtoModel m = WeightNormedConv(/*v_is_initializer=*/false);
  CHECK(ReorderWeightNorms(m.graph()) == 0);
  CHECK(m.graph().node(1).input(0) == "v");
  CHECK(m.graph().value_info_size() == 1);
}

}  // namespace
}  // namespace memplan
