// The pad_avg_pool entry of the import-fusion table (graph/fusion/pad_avg_pool.cc) on hand-built
// protos in the node shapes torch 1.13's exporter writes (symbolic_opset11._avg_pool, read back
// from torchvision's maxvit_t at opset 17): nn.AvgPool2d(3, 2, padding=1) with
// count_include_pad=True is a Pad (pads [0, 0, 1, 1, 0, 0, 1, 1]; torch writes them as a Constant
// node, an int64 initializer here) and an AveragePool without pads. It fuses into one AveragePool
// and leaves look-alikes as they are.
#include <catch2/catch.hpp>

#include <onnx/onnx_pb.h>

#include <string>
#include <vector>

#include "graph/fusion/fusion_table.h"
#include "tests/graph/fusion/fusion_proto_builder.h"

namespace memplan {
namespace {

using testing::CheckLeftAloneWhenEscaping;
using testing::CountOps;
using testing::Escape;
using testing::FusionProtoBuilder;
using testing::IntAttribute;
using testing::OnlyNode;

// The pad_avg_pool entry alone (testing::Fuse with its name).
int Fuse(FusionProtoBuilder& b) { return testing::Fuse(b, "pad_avg_pool"); }

std::vector<int64_t> Ints(const onnx::NodeProto& n, const std::string& name) {
  for (const auto& a : n.attribute())
    if (a.name() == name) return {a.ints().begin(), a.ints().end()};
  return {};
}

// torch.onnx's Pad + AveragePool for AvgPool2d(3, 2, padding) with count_include_pad=True.
// Returns the Pad node (its output feeds the pool).
onnx::NodeProto& TorchAvgPool(FusionProtoBuilder& b, const std::string& s, const std::string& x,
                              std::vector<int64_t> pads = {0, 0, 1, 1, 0, 0, 1, 1},
                              int64_t ceil_mode = 0) {
  auto& pad = b.Node("Pad", s + "/Pad", {x, b.Int64s(s + "/pads", pads)});
  auto* mode = pad.add_attribute();
  mode->set_name("mode");
  mode->set_type(onnx::AttributeProto::STRING);
  mode->set_s("constant");
  auto& pool = b.Node("AveragePool", s + "/AveragePool", {pad.output(0)});
  testing::AddInt(pool, "ceil_mode", ceil_mode);
  testing::AddInts(pool, "kernel_shape", {3, 3});
  testing::AddInts(pool, "pads", {0, 0, 0, 0});
  testing::AddInts(pool, "strides", {2, 2});
  return pad;
}

std::string PoolOutput(const std::string& s) { return s + "/AveragePool_out"; }

TEST_CASE("nn.AvgPool2d(padding=1) as exported becomes one AveragePool counting the padding",
          "[import][fusion][pool]") {
  FusionProtoBuilder b(17);
  auto x = b.Op("Relu", "/pre", {"input"});
  TorchAvgPool(b, "/proj/proj.0", x);
  b.Output(b.Op("Relu", "/post", {PoolOutput("/proj/proj.0")}));
  REQUIRE(Fuse(b) == 1);
  REQUIRE(CountOps(b.graph(), "Pad") == 0);
  REQUIRE(CountOps(b.graph(), "AveragePool") == 1);
  const auto& pool = OnlyNode(b.graph(), "AveragePool");
  CHECK(pool.name() == "/proj/proj.0/AveragePool");
  CHECK(pool.input_size() == 1);
  CHECK(pool.input(0) == x);  // the unpadded input: what avg_pool2d saves
  CHECK(pool.output(0) == PoolOutput("/proj/proj.0"));
  CHECK(Ints(pool, "pads") == std::vector<int64_t>{1, 1, 1, 1});
  CHECK(IntAttribute(pool, "count_include_pad") == 1);
  CHECK(IntAttribute(pool, "ceil_mode") == 0);
  CHECK(Ints(pool, "kernel_shape") == std::vector<int64_t>{3, 3});
  CHECK(Ints(pool, "strides") == std::vector<int64_t>{2, 2});

  // Other paddings: the Pad's pads (begin of N, C, H, W, then their ends) and the pool's.
  const struct {
    const char* section;
    int opset;
    std::vector<int64_t> pad_pads, pool_pads;
  } paddings[] = {
      {"asymmetric pads keep their begin/end order", 17, {0, 0, 0, 1, 0, 0, 2, 3}, {0, 1, 2, 3}},
      {"padding 0 (DenseNet's AvgPool2d(2, 2)): a zero Pad, fused all the same",
       13,
       {0, 0, 0, 0, 0, 0, 0, 0},
       {0, 0, 0, 0}},
  };
  for (const auto& padding : paddings) {
    DYNAMIC_SECTION(padding.section) {
      FusionProtoBuilder a(padding.opset);
      TorchAvgPool(a, "/p", a.Op("Relu", "/x", {"input"}), padding.pad_pads);
      a.Output(PoolOutput("/p"));
      REQUIRE(Fuse(a) == 1);
      CHECK(Ints(OnlyNode(a.graph(), "AveragePool"), "pads") == padding.pool_pads);
    }
  }
}

TEST_CASE("Pad + AveragePool look-alikes are left alone", "[import][fusion][pool]") {
  const struct {
    const char* section;
    std::vector<int64_t> pads;
    int64_t ceil_mode;
  } pools[] = {
      {"ceil_mode = 1", {0, 0, 1, 1, 0, 0, 1, 1}, 1},
      {"a channel axis padded", {0, 1, 1, 1, 0, 0, 1, 1}, 0},
  };
  for (const auto& pool : pools) {
    DYNAMIC_SECTION(pool.section) {
      FusionProtoBuilder b(17);
      TorchAvgPool(b, "/p", b.Op("Relu", "/x", {"input"}), pool.pads, pool.ceil_mode);
      b.Output(PoolOutput("/p"));
      CHECK(Fuse(b) == 0);
    }
  }
  SECTION("a non-zero pad value") {
    FusionProtoBuilder b(17);
    auto x = b.Op("Relu", "/x", {"input"});
    auto& pad = TorchAvgPool(b, "/p", x);
    pad.add_input(b.Scalar("/p/value", 1.0f));
    b.Output(PoolOutput("/p"));
    CHECK(Fuse(b) == 0);
  }
  SECTION("reflect padding") {
    FusionProtoBuilder b(17);
    auto& pad = TorchAvgPool(b, "/p", b.Op("Relu", "/x", {"input"}));
    pad.mutable_attribute(0)->set_s("reflect");
    b.Output(PoolOutput("/p"));
    CHECK(Fuse(b) == 0);
  }
  CheckLeftAloneWhenEscaping(
      "pad_avg_pool",
      [](FusionProtoBuilder& b, const std::string& x) {
        TorchAvgPool(b, "/p", x);
        return PoolOutput("/p");
      },
      {{"the padded tensor is read elsewhere too", "/p/Pad_out", Escape::kReadElsewhere}},
      /*opset=*/17);
  SECTION("a pool that already counts padding of its own") {
    FusionProtoBuilder b(17);
    TorchAvgPool(b, "/p", b.Op("Relu", "/x", {"input"}));
    for (auto& n : *b.graph().mutable_node())
      if (n.op_type() == "AveragePool") testing::AddInt(n, "count_include_pad", 1);
    b.Output(PoolOutput("/p"));
    CHECK(Fuse(b) == 0);
  }
}

}  // namespace
}  // namespace memplan
