// The max_dim, variance and glu entries of the import-fusion table (graph/fusion/max_dim.cc,
// variance.cc, glu.cc) on hand-built protos in the node shapes torch.onnx (TorchScript, opset 17)
// and the dynamo exporter (opset 18) write, read back from exports of torch 2.x: they fuse into
// one memplan node each and leave look-alikes as they are.
#include <catch2/catch.hpp>

#include <onnx/onnx_pb.h>

#include <optional>
#include <string>
#include <vector>

#include "graph/fusion/fusion_table.h"
#include "tests/graph/fusion/fusion_proto_builder.h"

namespace memplan {
namespace {

using testing::AddInt;
using testing::AddInts;
using testing::CountOps;
using testing::Fuse;
using testing::FusionProtoBuilder;
using testing::OnlyNode;

// ReduceMax over `axes` of a Relu's output, with an ArgMax (axis, keepdims) beside it when
// `arg_max_axis` is set; both outputs are graph outputs' inputs through Relus.
FusionProtoBuilder MaxModel(std::vector<int64_t> axes, int64_t keepdims,
                            std::optional<int64_t> arg_max_axis = std::nullopt,
                            int64_t arg_max_keepdims = 0) {
  FusionProtoBuilder b(17);
  auto x = b.Op("Relu", "/pre", {"input"});
  auto& max = b.Node("ReduceMax", "/ReduceMax", {x});
  AddInts(max, "axes", axes);
  AddInt(max, "keepdims", keepdims);
  b.Output(b.Op("Relu", "/post", {max.output(0)}));
  if (arg_max_axis) {
    auto& arg = b.Node("ArgMax", "/ArgMax", {x});
    AddInt(arg, "axis", *arg_max_axis);
    AddInt(arg, "keepdims", arg_max_keepdims);
    b.Output(arg.output(0));
  }
  return b;
}

TEST_CASE("torch.max(x, dim) becomes one memplan:MaxDim", "[import][fusion][max_dim]") {
  SECTION("values only, keepdims=0") {
    auto b = MaxModel({2}, 0);
    REQUIRE(Fuse(b, "max_dim") == 1);
    const auto& m = OnlyNode(b.graph(), "MaxDim");
    CHECK(m.domain() == "memplan");
    CHECK(m.output_size() == 1);
    CHECK(CountOps(b.graph(), "ReduceMax") == 0);
  }
  SECTION("with its ArgMax: the indices become output 1") {
    auto b = MaxModel({1}, 1, /*arg_max_axis=*/1, /*arg_max_keepdims=*/1);
    REQUIRE(Fuse(b, "max_dim") == 1);
    const auto& m = OnlyNode(b.graph(), "MaxDim");
    REQUIRE(m.output_size() == 2);
    CHECK(m.output(1) == "/ArgMax_out");
    CHECK(CountOps(b.graph(), "ArgMax") == 0);
  }
}

TEST_CASE("amax look-alikes are left alone", "[import][fusion][max_dim]") {
  SECTION("keepdims=1 and no ArgMax (x - x.amax(dim, keepdim=True))") {
    auto b = MaxModel({2}, 1);
    CHECK(Fuse(b, "max_dim") == 0);
  }
  SECTION("two axes") {
    auto b = MaxModel({1, 2}, 0);
    CHECK(Fuse(b, "max_dim") == 0);
  }
  SECTION("every axis (torch.max(x))") {
    auto b = MaxModel({}, 0);
    CHECK(Fuse(b, "max_dim") == 0);
  }
  SECTION("an ArgMax over another axis, keepdims=1") {
    auto b = MaxModel({2}, 1, /*arg_max_axis=*/1, /*arg_max_keepdims=*/1);
    CHECK(Fuse(b, "max_dim") == 0);
  }
}

// x.var(-1) as the exporters write it: the square `square` ("Mul" or "Pow"); `d_escapes` makes a
// second node read d.
FusionProtoBuilder VarModel(const std::string& square, bool d_escapes = false) {
  FusionProtoBuilder b(17);
  auto x = b.Op("Relu", "/pre", {"input"});
  auto& mean = b.Node("ReduceMean", "/ReduceMean", {x});
  AddInts(mean, "axes", {-1});
  auto d = b.Op("Sub", "/Sub", {x, mean.output(0)});
  auto sq = square == "Mul" ? b.Op("Mul", "/Mul", {d, d})
                            : b.Op("Pow", "/Pow", {d, b.Scalar("/two", 2.0f)});
  auto& var = b.Node("ReduceMean", "/ReduceMean_1", {sq});
  AddInts(var, "axes", {-1});
  AddInt(var, "keepdims", 0);
  b.Output(var.output(0));
  if (d_escapes) b.Output(b.Op("Relu", "/other", {d}));
  return b;
}

TEST_CASE("torch.var becomes one memplan:Variance", "[import][fusion][variance]") {
  auto b = VarModel("Mul");
  REQUIRE(Fuse(b, "variance") == 1);
  const auto& v = OnlyNode(b.graph(), "Variance");
  CHECK(v.domain() == "memplan");
  CHECK(v.input(0) == "/pre_out");
  CHECK(testing::IntAttribute(v, "keepdims") == 0);
  CHECK(CountOps(b.graph(), "ReduceMean") == 0);
  CHECK(CountOps(b.graph(), "Sub") == 0);
}

TEST_CASE("variance look-alikes are left alone", "[import][fusion][variance]") {
  SECTION("Pow(d, 2): a formula, only variance_formula takes it") {
    auto b = VarModel("Pow");
    CHECK(Fuse(b, "variance") == 0);
    CHECK(Fuse(b, "variance_formula") == 1);
  }
  SECTION("d read elsewhere (a LayerNorm without affine divides by it)") {
    auto b = VarModel("Mul", /*d_escapes=*/true);
    CHECK(Fuse(b, "variance") == 0);
  }
}

// F.glu(x, -1): Split into halves, Sigmoid of the second, Mul.
FusionProtoBuilder GluModel(bool split_sizes, bool swapped = false) {
  FusionProtoBuilder b(18);
  auto x = b.Op("Relu", "/pre", {"input"});
  auto& split = split_sizes ? b.Node("Split", "/Split", {x, b.Int64s("/sizes", {4, 4})}, 2)
                            : b.Node("Split", "/Split", {x}, 2);
  AddInt(split, "axis", -1);
  if (!split_sizes) AddInt(split, "num_outputs", 2);
  const std::string a = split.output(swapped ? 1 : 0);
  const std::string g = split.output(swapped ? 0 : 1);
  b.Output(b.Op("Mul", "/Mul", {a, b.Op("Sigmoid", "/Sigmoid", {g})}));
  return b;
}

TEST_CASE("F.glu becomes one memplan:Glu", "[import][fusion][glu]") {
  auto b = GluModel(false);
  REQUIRE(Fuse(b, "glu") == 1);
  const auto& g = OnlyNode(b.graph(), "Glu");
  CHECK(g.domain() == "memplan");
  CHECK(testing::IntAttribute(g, "axis") == -1);
  CHECK(CountOps(b.graph(), "Split") == 0);
}

TEST_CASE("glu look-alikes are left alone", "[import][fusion][glu]") {
  SECTION("a chunk with sizes (a gate written by hand in TorchScript's Split form)") {
    auto b = GluModel(true);
    CHECK(Fuse(b, "glu") == 0);
  }
  SECTION("b * sigmoid(a)") {
    auto b = GluModel(false, /*swapped=*/true);
    CHECK(Fuse(b, "glu") == 0);
  }
}

}  // namespace
}  // namespace memplan
