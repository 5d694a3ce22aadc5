// The group_norm entry of the import-fusion table (graph/fusion/group_norm.cc) on hand-built
// protos in the node shapes torch 1.13's exporter writes for nn.GroupNorm(G, C) at opset 13-17
// (symbolic_opset9.group_norm, read back from an export): Reshape(x, [0, G, -1]),
// InstanceNormalization(ones[G], zeros[G]), Reshape(Shape(x)), Mul(Unsqueeze(w, [1, 2])),
// Add(Unsqueeze(b, [1, 2])). It fuses into one GroupNormalization and leaves look-alikes alone.
#include <catch2/catch.hpp>

#include <onnx/onnx_pb.h>

#include <string>
#include <vector>

#include "graph/fusion/fusion_table.h"
#include "tests/graph/fusion/fusion_proto_builder.h"

namespace memplan {
namespace {

using testing::CountOps;
using testing::FloatAttribute;
using testing::FusionProtoBuilder;
using testing::IntAttribute;
using testing::OnlyNode;

struct GroupNormExport {
  float ones = 1.0f;                         // the instance norm's scale
  std::vector<int64_t> target = {0, 4, -1};  // the first Reshape's shape
  std::vector<int64_t> unsqueeze = {1, 2};   // the weight's Unsqueeze axes
  bool sliced_shape = false;                 // Shape-15 with start = 1: not x's whole shape
};

// nn.GroupNorm(4, 16) on x [N, 16, H, W], as exported; returns the Add's output.
std::string Export(FusionProtoBuilder& b, const std::string& x, const GroupNormExport& e) {
  auto split = b.Op("Reshape", "/gn/Reshape", {x, b.Int64s("/gn/target", e.target)});
  auto& norm = b.Node("InstanceNormalization", "/gn/InstanceNormalization",
                      {split, b.Filled("/gn/ones", {4}, e.ones), b.Filled("/gn/zeros", {4}, 0.0f)});
  testing::AddFloat(norm, "epsilon", 1e-5f);
  auto& shape = b.Node("Shape", "/gn/Shape", {x});
  if (e.sliced_shape) testing::AddInt(shape, "start", 1);
  auto unsplit = b.Op("Reshape", "/gn/Reshape_1", {norm.output(0), shape.output(0)});
  auto w = b.Op("Unsqueeze", "/gn/Unsqueeze",
                {b.Weight("gn.weight", {16}), b.Int64s("/gn/axes", e.unsqueeze)});
  auto bias = b.Op("Unsqueeze", "/gn/Unsqueeze_1",
                   {b.Weight("gn.bias", {16}), b.Int64s("/gn/axes_1", {1, 2})});
  return b.Op("Add", "/gn/Add", {b.Op("Mul", "/gn/Mul", {unsplit, w}), bias});
}

TEST_CASE("nn.GroupNorm as exported becomes one GroupNormalization",
          "[import][fusion][group_norm]") {
  FusionProtoBuilder b(17);
  auto x = b.Op("Relu", "/pre", {"input"});
  auto y = Export(b, x, {});
  b.Output(b.Op("Relu", "/post", {y}));
  REQUIRE(testing::Fuse(b, "group_norm") == 1);
  const auto& gn = OnlyNode(b.graph(), "GroupNormalization");
  CHECK(gn.domain().empty());
  REQUIRE(gn.input_size() == 3);
  CHECK(gn.input(0) == x);
  CHECK(gn.input(1) == "gn.weight");  // per channel, not unsqueezed
  CHECK(gn.input(2) == "gn.bias");
  CHECK(gn.output(0) == y);  // the next node still reads the same name
  CHECK(IntAttribute(gn, "num_groups") == 4);
  CHECK(FloatAttribute(gn, "epsilon") == 1e-5f);
  for (const char* gone : {"InstanceNormalization", "Reshape", "Shape", "Unsqueeze", "Mul", "Add"})
    CHECK(CountOps(b.graph(), gone) == 0);
}

// The same GroupNorm from torch.onnx's dynamo exporter after its optimizer, x of static shape
// [2, 16, 8, 8] (read back from diffusers' UNet2DModel, torch 2.15): the Reshape back to x's
// shape reads the folded constant [2, 16, 8, 8], and w, b are folded Unsqueezes: [16, 1, 1]
// initializers.
struct DynamoGroupNorm {
  std::vector<int64_t> back = {2, 16, 8, 8};  // the second Reshape's constant target
  std::vector<int64_t> weight = {16, 1, 1};   // the folded weight's dims
};

std::string DynamoExport(FusionProtoBuilder& b, const std::string& x, const DynamoGroupNorm& e) {
  auto* vi = b.graph().add_value_info();  // the exporter records every value's shape
  vi->set_name(x);
  vi->mutable_type()->mutable_tensor_type()->set_elem_type(onnx::TensorProto::FLOAT);
  for (int64_t d : {2, 16, 8, 8})
    vi->mutable_type()->mutable_tensor_type()->mutable_shape()->add_dim()->set_dim_value(d);
  auto split = b.Op("Reshape", "node_Reshape_39", {x, b.Int64s("val_38", {0, 4, -1})});
  auto& norm = b.Node("InstanceNormalization", "node_InstanceNormalization_46",
                      {split, b.Weight("val_42", {4}), b.Filled("val_45", {4}, 0.0f)});
  testing::AddFloat(norm, "epsilon", 1e-5f);
  auto unsplit = b.Op("Reshape", "node_Reshape_48", {norm.output(0), b.Int64s("val_47", e.back)});
  auto scaled = b.Op("Mul", "node_Mul_56", {unsplit, b.Weight("val_55", e.weight)});
  return b.Op("Add", "node_group_norm", {scaled, b.Weight("val_57", {16, 1, 1})});
}

TEST_CASE("nn.GroupNorm from the dynamo exporter becomes one GroupNormalization",
          "[import][fusion][group_norm]") {
  FusionProtoBuilder b(18);
  auto x = b.Op("Relu", "/pre", {"input"});
  auto y = DynamoExport(b, x, {});
  b.Output(b.Op("Relu", "/post", {y}));
  REQUIRE(testing::Fuse(b, "group_norm") == 1);
  const auto& gn = OnlyNode(b.graph(), "GroupNormalization");
  REQUIRE(gn.input_size() == 3);
  CHECK(gn.input(0) == x);
  CHECK(gn.input(1) == "val_55");  // the folded [16, 1, 1] weight: 16 values, as w
  CHECK(gn.input(2) == "val_57");
  CHECK(gn.output(0) == y);
  CHECK(IntAttribute(gn, "num_groups") == 4);
  for (const char* gone : {"InstanceNormalization", "Reshape", "Mul", "Add"})
    CHECK(CountOps(b.graph(), gone) == 0);

  const auto fused = [](const DynamoGroupNorm& e) {
    FusionProtoBuilder c(18);
    c.Output(c.Op("Relu", "/post", {DynamoExport(c, c.Op("Relu", "/pre", {"input"}), e)}));
    return testing::Fuse(c, "group_norm");
  };
  CHECK(fused({.back = {2, 16, 64}}) == 0);  // not back to x's shape
  CHECK(fused({.weight = {16, 1}}) == 0);    // rank 2: would broadcast on the wrong axes
  CHECK(fused({.weight = {8, 1, 1}}) == 0);  // not x's 16 channels
}

TEST_CASE("GroupNorm look-alikes are left alone", "[import][fusion][group_norm]") {
  const auto fused = [](const GroupNormExport& e) {
    FusionProtoBuilder b(17);
    b.Output(b.Op("Relu", "/post", {Export(b, b.Op("Relu", "/pre", {"input"}), e)}));
    return testing::Fuse(b, "group_norm");
  };
  GroupNormExport scaled;
  scaled.ones = 2.0f;  // an instance norm with its own scale: not GroupNorm's
  CHECK(fused(scaled) == 0);
  GroupNormExport regrouped;
  regrouped.target = {0, 4, 2, -1};  // not [0, G, -1]
  CHECK(fused(regrouped) == 0);
  GroupNormExport shifted;
  shifted.unsqueeze = {0, 2};  // the weight on another axis than the channels'
  CHECK(fused(shifted) == 0);
  GroupNormExport sliced;
  sliced.sliced_shape = true;
  CHECK(fused(sliced) == 0);
  CHECK(fused(GroupNormExport{}) == 1);
}

}  // namespace
}  // namespace memplan
