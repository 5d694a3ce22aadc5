// The erf_gelu import fusion on hand-built protos: which node chains become one Gelu and which
// must not.
#include <catch2/catch.hpp>

#include <onnx/onnx_pb.h>

#include <cmath>
#include <string>
#include <utility>

#include "graph/fusion/fusion_table.h"
#include "graph/ops/standard_aliases.h"
#include "tests/graph/fusion/fusion_proto_builder.h"
#include "tests/graph/import_test_util.h"

namespace memplan {
namespace {

using testing::CountOps;
using ProtoBuilder = testing::FusionProtoBuilder;

int FuseErfGelu(onnx::ModelProto& model) {
  return ApplyFusion(model, FusionEntryNamed("erf_gelu"));
}

// torch.onnx's form: Mul(Mul(x, 1 + erf(x / sqrt 2)), 0.5), constants as Constant nodes.
// multiplicand * 0.5 * (1 + erf(x / divisor)) in the five nodes torch exports; a GELU only when
// the divisor is sqrt(2) and the multiplicand is x.
std::string ErfGeluShaped(ProtoBuilder& b, const std::string& scope, const std::string& x,
                          float divisor, const std::string& multiplicand) {
  auto d = b.Op("Div", scope + "/Div", {x, b.Scalar(scope + "/c0", divisor)});
  auto e = b.Op("Erf", scope + "/Erf", {d});
  auto a = b.Op("Add", scope + "/Add", {e, b.Scalar(scope + "/c1", 1.0f)});
  auto m = b.Op("Mul", scope + "/Mul", {multiplicand, a});
  return b.Op("Mul", scope + "/Mul_1", {m, b.Scalar(scope + "/c2", 0.5f)});
}

std::string TorchGelu(ProtoBuilder& b, const std::string& scope, const std::string& x) {
  return ErfGeluShaped(b, scope, x, std::sqrt(2.0f), x);
}

TEST_CASE("the exported exact GELU becomes one Gelu node", "[import][fusion][gelu]") {
  ProtoBuilder b;
  auto x = b.Op("Relu", "/pre", {"input"});
  auto y = TorchGelu(b, "/mlp/act", x);
  auto z = b.Op("Relu", "/post", {y});
  b.Output(z);
  REQUIRE(FuseErfGelu(b.model()) == 1);
  const auto& g = b.graph();
  // Relu, Gelu, Relu: the five pattern nodes and their three Constant nodes are gone.
  REQUIRE(g.node_size() == 3);
  const auto& gelu = g.node(1);
  CHECK(gelu.op_type() == "Gelu");
  CHECK(gelu.domain() == "com.microsoft");
  CHECK(gelu.name() == "/mlp/act/Gelu");
  CHECK(gelu.input(0) == x);
  CHECK(gelu.output(0) == y);
  bool imports_contrib = false;
  for (const auto& op : b.model().opset_import()) imports_contrib |= op.domain() == "com.microsoft";
  CHECK(imports_contrib);
}

TEST_CASE("GELU variants: x * (1/sqrt 2), 1 + erf swapped", "[import][fusion][gelu]") {
  ProtoBuilder b;
  auto x = b.Op("Relu", "/pre", {"input"});
  auto s = b.Op("Mul", "/g/Mul_s", {b.Scalar("/g/c0", float(1 / std::sqrt(2.0))), x});
  auto e = b.Op("Erf", "/g/Erf", {s});
  auto a = b.Op("Add", "/g/Add", {b.Scalar("/g/c1", 1.0f), e});
  auto m = b.Op("Mul", "/g/Mul_m", {a, x});
  auto y = b.Op("Mul", "/g/Mul_y", {b.Scalar("/g/c2", 0.5f), m});
  b.Output(y);
  REQUIRE(FuseErfGelu(b.model()) == 1);
  REQUIRE(b.graph().node_size() == 2);
  CHECK(b.graph().node(1).op_type() == "Gelu");
  CHECK(b.graph().node(1).output(0) == y);
}

// x * 0.5 * (1.0 + torch.erf(x / math.sqrt(2.0))) written by hand (ESM's gelu): the half on x
// first, an order neither exporter writes for F.gelu. Eager autograd keeps x / sqrt 2, x * 0.5
// and 1 + erf for it (three tensors, not F.gelu's one), so only the formulas' entry fuses it.
TEST_CASE("a hand-written GELU with the half on x first is fused only as a formula",
          "[import][fusion][gelu]") {
  auto build = [](ProtoBuilder& b) {
    auto x = b.Op("Relu", "/pre", {"input"});
    auto d = b.Op("Div", "/g/Div", {x, b.Scalar("/g/c0", std::sqrt(2.0f))});
    auto e = b.Op("Erf", "/g/Erf", {d});
    auto a = b.Op("Add", "/g/Add", {b.Scalar("/g/c1", 1.0f), e});
    auto h = b.Op("Mul", "/g/Mul_h", {x, b.Scalar("/g/c2", 0.5f)});
    auto y = b.Op("Mul", "/g/Mul_y", {h, a});
    b.Output(y);
    return std::make_pair(x, y);
  };
  ProtoBuilder b;
  build(b);
  CHECK(FuseErfGelu(b.model()) == 0);
  CHECK(CountOps(b.graph(), "Erf") == 1);
  ProtoBuilder f;
  const auto [x, y] = build(f);
  REQUIRE(ApplyFusion(f.model(), FusionEntryNamed("erf_gelu_formula")) == 1);
  REQUIRE(f.graph().node_size() == 2);
  CHECK(f.graph().node(1).op_type() == "Gelu");
  CHECK(f.graph().node(1).input(0) == x);
  CHECK(f.graph().node(1).output(0) == y);
  // The exporters' order is not a formula: the formula entry leaves torch.onnx's F.gelu alone.
  ProtoBuilder t;
  auto tx = t.Op("Relu", "/pre", {"input"});
  t.Output(TorchGelu(t, "/g", tx));
  CHECK(ApplyFusion(t.model(), FusionEntryNamed("erf_gelu_formula")) == 0);
}

// torch.onnx's dynamo exporter (opset 18) halves the gate before x:
// Mul(x, Mul(0.5, 1 + erf(x / sqrt 2))), the constants as initializers.
TEST_CASE("GELU with the half applied to the gate, as the dynamo exporter writes it",
          "[import][fusion][gelu]") {
  ProtoBuilder b;
  auto x = b.Op("Relu", "/pre", {"input"});
  auto d = b.Op("Div", "/g/Div", {x, b.Scalar("/g/c0", std::sqrt(2.0f))});
  auto e = b.Op("Erf", "/g/Erf", {d});
  auto a = b.Op("Add", "/g/Add", {e, b.Scalar("/g/c1", 1.0f)});
  auto h = b.Op("Mul", "/g/Mul_h", {b.Scalar("/g/c2", 0.5f), a});
  auto y = b.Op("Mul", "/g/Mul_y", {x, h});
  b.Output(y);
  REQUIRE(FuseErfGelu(b.model()) == 1);
  REQUIRE(b.graph().node_size() == 2);
  CHECK(b.graph().node(1).op_type() == "Gelu");
  CHECK(b.graph().node(1).input(0) == x);
  CHECK(b.graph().node(1).output(0) == y);
  // The halved gate times something other than x is not a GELU.
  ProtoBuilder c;
  auto x2 = c.Op("Relu", "/pre", {"input"});
  auto other = c.Op("Relu", "/other", {"input"});
  auto d2 = c.Op("Div", "/g/Div", {x2, c.Scalar("/g/c0", std::sqrt(2.0f))});
  auto e2 = c.Op("Erf", "/g/Erf", {d2});
  auto a2 = c.Op("Add", "/g/Add", {e2, c.Scalar("/g/c1", 1.0f)});
  auto h2 = c.Op("Mul", "/g/Mul_h", {c.Scalar("/g/c2", 0.5f), a2});
  c.Output(c.Op("Mul", "/g/Mul_y", {other, h2}));
  CHECK(FuseErfGelu(c.model()) == 0);
}

TEST_CASE("GELU look-alikes are left alone", "[import][fusion][gelu]") {
  SECTION("an intermediate is read elsewhere") {
    ProtoBuilder b;
    auto x = b.Op("Relu", "/pre", {"input"});
    auto y = TorchGelu(b, "/g", x);
    b.Output(y);
    b.Output("/g/Erf_out");  // the erf is also a graph output
    CHECK(FuseErfGelu(b.model()) == 0);
    CHECK(CountOps(b.graph(), "Erf") == 1);
  }
  SECTION("the divisor is not sqrt 2") {
    ProtoBuilder b;
    auto x = b.Op("Relu", "/pre", {"input"});
    b.Output(ErfGeluShaped(b, "/g", x, std::sqrt(3.0f), x));
    CHECK(FuseErfGelu(b.model()) == 0);
    CHECK(b.graph().node_size() == 9);  // Relu, three Constants, the five pattern nodes
  }
  SECTION("the product multiplies another tensor than the erf's input") {
    ProtoBuilder b;
    auto x = b.Op("Relu", "/pre", {"input"});
    auto other = b.Op("Relu", "/other", {"input"});
    b.Output(ErfGeluShaped(b, "/g", x, std::sqrt(2.0f), other));
    CHECK(FuseErfGelu(b.model()) == 0);
  }
}

TEST_CASE("importing an exported GPT fuses its GELUs unless asked not to",
          "[import][fusion][gelu]") {
  using testing::ImportFixture;
  // TinyGPT has 2 blocks, one GELU each: fusing removes 4 nodes and 3 Constant nodes per block.
  const Graph fused = ImportFixture("gpt_opset17.onnx");
  ImportOptions keep;
  keep.fusions = FusionSet::kNone;
  const Graph unfused = ImportFixture("gpt_opset17.onnx", keep);
  int gelus = 0, erfs = 0;
  for (const Node& n : fused.nodes()) gelus += n.op_type == "Gelu";
  for (const Node& n : unfused.nodes()) erfs += n.op_type == "Erf";
  CHECK(gelus == 2);
  CHECK(erfs == 2);
  CHECK(unfused.num_nodes() - fused.num_nodes() == 2 * 7);
}

TEST_CASE("backends run the fused Gelu with the standard kernel", "[import][fusion][gelu]") {
  CHECK(RunsAsStandardOnnxOp("", "Gelu"));
  CHECK(RunsAsStandardOnnxOp("ai.onnx", "MatMul"));
  CHECK(RunsAsStandardOnnxOp("com.microsoft", "Gelu"));
  CHECK_FALSE(RunsAsStandardOnnxOp("com.microsoft", "FusedMatMul"));
  CHECK_FALSE(RunsAsStandardOnnxOp("ai.onnx.ml", "Gelu"));
}

}  // namespace
}  // namespace memplan
