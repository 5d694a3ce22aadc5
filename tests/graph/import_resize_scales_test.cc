// torch.onnx (1.13, opset 11 to 17) writes F.interpolate(x, scale_factor=2) as Resize whose
// scales are Concat(Constant [1, 1], Constant [2, 2]): ONNX's own inference does not follow
// floats through the Concat, and the import left the output's dims unbound ("dimension 'unk__0'
// is not bound") until the scales' values were carried (Value::float_values).

#include <catch2/catch.hpp>

#include <optional>
#include <string>
#include <vector>

#include "tests/graph/proto_model.h"

namespace memplan {
namespace {

using testing::ProtoModel;

// A Constant node holding `values` (floats, 1-D).
void FloatConstant(ProtoModel& m, const std::string& output, const std::vector<float>& values) {
  auto* a = m.Node("Constant", {}, {output}).add_attribute();
  a->set_name("value");
  a->set_type(onnx::AttributeProto::TENSOR);
  a->mutable_t()->set_data_type(onnx::TensorProto::FLOAT);
  a->mutable_t()->add_dims(static_cast<int64_t>(values.size()));
  for (float v : values) a->mutable_t()->add_float_data(v);
}

TEST_CASE("import: Resize scales from a Concat of Constants give the output dims",
          "[import][resize]") {
  ProtoModel m(/*opset=*/17);
  m.Input("x", onnx::TensorProto::FLOAT, {"batch", 3, "h", 8});
  FloatConstant(m, "ones", {1.0f, 1.0f});
  FloatConstant(m, "twos", {2.0f, 2.0f});
  testing::SetInt(m.Node("Concat", {"ones", "twos"}, {"scales"}), "axis", 0);
  auto& resize = m.Node("Resize", {"x", "", "scales"}, {"y"});
  testing::SetString(resize, "mode", "nearest");
  testing::SetString(resize, "coordinate_transformation_mode", "asymmetric");
  m.Node("Relu", {"y"}, {"z"});
  m.Output("z", onnx::TensorProto::FLOAT, {{"batch", 3, "h2", 16}});
  const Graph g = m.Import("resize_scales.onnx");
  const std::optional<ValueId> y = g.FindValue("y");
  REQUIRE(y);
  const Shape& shape = g.value(*y).shape;
  REQUIRE(shape.known);
  REQUIRE(shape.rank() == 4);
  CHECK(shape.dims[1] == Dim(3));
  CHECK(shape.dims[3] == Dim(16));
  // h is a symbol: doubled, not left to a fresh unknown.
  const std::optional<SymbolId> h = g.symbols().Find("h");
  REQUIRE(h);
  CHECK(shape.dims[2] == Dim(2) * Dim::Symbol(*h));
  CHECK(g.value(*g.FindValue("scales")).float_values == std::vector<double>{1, 1, 2, 2});
}

}  // namespace
}  // namespace memplan
