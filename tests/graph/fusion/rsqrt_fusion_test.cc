// The rsqrt entry of the import-fusion table (graph/fusion/rsqrt.cc) on hand-built protos in the
// node shapes torch 1.13's exporter writes for torch.rsqrt(v) (symbolic_opset9.rsqrt, read back
// from an export at opset 17): Div(Constant 1, Sqrt(v)). It fuses into one memplan:Rsqrt and
// leaves look-alikes as they are.
#include <catch2/catch.hpp>

#include <onnx/onnx_pb.h>

#include <string>

#include "graph/fusion/fusion_table.h"
#include "tests/graph/fusion/fusion_proto_builder.h"

namespace memplan {
namespace {

using testing::CountOps;
using testing::FusionProtoBuilder;
using testing::IntAttribute;
using testing::OnlyNode;

int Fuse(FusionProtoBuilder& b) { return testing::Fuse(b, "rsqrt"); }

TEST_CASE("torch.rsqrt as exported becomes one memplan:Rsqrt", "[import][fusion][rsqrt]") {
  // The Constant of ones: torch.ones(1) is [1]; the folded export has [].
  for (const std::vector<int64_t>& dims : {std::vector<int64_t>{}, std::vector<int64_t>{1}}) {
    FusionProtoBuilder b(17);
    auto v = b.Op("Relu", "/pre", {"input"});
    auto root = b.Op("Sqrt", "/Sqrt", {v});
    auto r = b.Op("Div", "/Div", {b.Filled("/Constant_2", dims, 1.0f), root});
    b.Output(b.Op("Mul", "/Mul", {v, r}));
    INFO("ones of rank " << dims.size());
    REQUIRE(Fuse(b) == 1);
    const auto& rsqrt = OnlyNode(b.graph(), "Rsqrt");
    CHECK(rsqrt.domain() == "memplan");
    CHECK(rsqrt.input_size() == 1);
    CHECK(rsqrt.input(0) == v);
    CHECK(rsqrt.output(0) == r);  // the Mul still reads the same name
    CHECK(IntAttribute(rsqrt, "broadcast_rank") == static_cast<int64_t>(dims.size()));
    CHECK(CountOps(b.graph(), "Sqrt") == 0);
    CHECK(CountOps(b.graph(), "Div") == 0);
  }
}

TEST_CASE("rsqrt look-alikes are left alone", "[import][fusion][rsqrt]") {
  auto model = [](auto write_div) {
    FusionProtoBuilder b(17);
    auto v = b.Op("Relu", "/pre", {"input"});
    auto root = b.Op("Sqrt", "/Sqrt", {v});
    b.Output(b.Op("Mul", "/Mul", {v, write_div(b, v, root)}));
    return b;
  };
  SECTION("2 / sqrt(v)") {
    auto b = model([](FusionProtoBuilder& c, const std::string&, const std::string& root) {
      return c.Op("Div", "/Div", {c.Filled("/two", {}, 2.0f), root});
    });
    CHECK(Fuse(b) == 0);
  }
  SECTION("v / sqrt(v): a tensor numerator") {
    auto b = model([](FusionProtoBuilder& c, const std::string& v, const std::string& root) {
      return c.Op("Div", "/Div", {v, root});
    });
    CHECK(Fuse(b) == 0);
  }
  SECTION("sqrt(v) / 1: the root is the dividend") {
    auto b = model([](FusionProtoBuilder& c, const std::string&, const std::string& root) {
      return c.Op("Div", "/Div", {root, c.Filled("/one", {}, 1.0f)});
    });
    CHECK(Fuse(b) == 0);
  }
  SECTION("ones of two elements") {
    auto b = model([](FusionProtoBuilder& c, const std::string&, const std::string& root) {
      return c.Op("Div", "/Div", {c.Filled("/one", {2}, 1.0f), root});
    });
    CHECK(Fuse(b) == 0);
  }
  SECTION("a one held in an initializer (a parameter)") {
    auto b = model([](FusionProtoBuilder& c, const std::string&, const std::string& root) {
      return c.Op("Div", "/Div", {c.Weight("one", {1}), root});
    });
    CHECK(Fuse(b) == 0);
  }
  SECTION("the root is read elsewhere too") {
    auto b = model([](FusionProtoBuilder& c, const std::string&, const std::string& root) {
      return c.Op("Div", "/Div", {c.Filled("/one", {}, 1.0f), root});
    });
    b.Output("/Sqrt_out");
    CHECK(Fuse(b) == 0);
  }
}

}  // namespace
}  // namespace memplan
