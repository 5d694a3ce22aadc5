// A random draw is never a constant, even when all it reads is: torch.onnx (1.13) writes
// torch.bernoulli(torch.full(...)) as RandomUniformLike(ConstantOfShape) < p, and the import used
// to mark the draw a constant (every input constant), so `verify` drew it once for every batch
// size and its split-batch check failed (0.92 relative).

#include <catch2/catch.hpp>

#include <optional>

#include "tests/graph/proto_model.h"

namespace memplan {
namespace {

using testing::ProtoModel;

TEST_CASE("import: a random draw from a constant-shaped tensor is not a constant",
          "[import][random]") {
  ProtoModel m(/*opset=*/15);
  m.Input("x", onnx::TensorProto::FLOAT, {"batch", 4});
  auto& shape = m.Node("ConstantOfShape", {"dims"}, {"p"});
  auto* value = shape.add_attribute();
  value->set_name("value");
  value->set_type(onnx::AttributeProto::TENSOR);
  value->mutable_t()->set_data_type(onnx::TensorProto::FLOAT);
  value->mutable_t()->add_dims(1);
  value->mutable_t()->add_float_data(0.8f);
  m.Node("Shape", {"x"}, {"dims"});
  m.Node("RandomUniformLike", {"p"}, {"u"});
  m.Node("Less", {"u", "p"}, {"keep"});
  testing::SetInt(m.Node("Cast", {"keep"}, {"mask"}), "to", onnx::TensorProto::FLOAT);
  m.Node("Mul", {"x", "mask"}, {"y"});
  m.Output("y", onnx::TensorProto::FLOAT, {{"batch", 4}});
  const Graph g = m.Import("random_draws.onnx");
  auto kind = [&](const char* name) {
    const std::optional<ValueId> v = g.FindValue(name);
    REQUIRE(v);
    return g.value(*v).kind;
  };
  CHECK(kind("p") == ValueKind::kConstant);  // a fill of a known shape: a constant
  CHECK(kind("u") == ValueKind::kIntermediate);
  CHECK(kind("keep") == ValueKind::kIntermediate);
  CHECK(kind("mask") == ValueKind::kIntermediate);
}

}  // namespace
}  // namespace memplan
