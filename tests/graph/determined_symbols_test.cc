// Symbols a shape rule introduces for a dim no polynomial writes (a strided Conv's output
// length, a Div or Mod of a symbol) are bound by BindSymbols once the real axes are
// (graph/bound_shape_check.h DeterminedSymbols): the values below are worked out by hand from
// ONNX's formulas, not read back from memplan.
#include <catch2/catch.hpp>

#include <optional>
#include <string>
#include <vector>

#include "graph/bind_symbols.h"
#include "tests/graph/proto_model.h"

namespace memplan {
namespace {

using testing::ProtoModel;

// The symbol standing for axis `axis` of value `name` (a generated one).
SymbolId SymbolAt(const Graph& g, const std::string& name, size_t axis) {
  const std::optional<ValueId> v = g.FindValue(name);
  REQUIRE(v.has_value());
  const Shape& shape = g.value(*v).shape;
  REQUIRE(shape.known);
  REQUIRE(shape.rank() > axis);
  const std::optional<SymbolId> s = shape.dims[axis].single_symbol();
  REQUIRE(s.has_value());
  return *s;
}

// x [batch, 8, frames] -> Conv1d(8 -> 16, kernel 3, stride 2, padding 1): Whisper's second conv.
ProtoModel StridedConv() {
  ProtoModel m(17);
  m.Input("x", onnx::TensorProto::FLOAT, {"batch", 8, "frames"});
  m.Initializer("W", onnx::TensorProto::FLOAT, {16, 8, 3});
  auto& conv = m.Node("Conv", {"x", "W"}, {"y"});
  testing::SetInts(conv, "strides", {2});
  testing::SetInts(conv, "pads", {1, 1});
  testing::SetInts(conv, "kernel_shape", {3});
  // The exporter names the length it cannot relate to `frames` (torch.onnx: "Conv_y_dim_2").
  m.Output("y", onnx::TensorProto::FLOAT, std::vector<testing::ProtoDim>{"batch", 16, "y_len"});
  return m;
}

TEST_CASE("a strided conv's output length is bound from the input length", "[symbols]") {
  const Graph g = StridedConv().Import("strided_conv.onnx");
  const SymbolId out = SymbolAt(g, "y", 2);
  CHECK(g.symbols().Name(out) != "frames");
  // floor((frames + 2*1 - 3) / 2) + 1: frames = 20 -> floor(19 / 2) + 1 = 10; 3000 (Whisper's
  // 30 s of mel frames) -> floor(2999 / 2) + 1 = 1500.
  auto at20 = BindSymbols(g, std::nullopt, {{"frames", 20}});
  REQUIRE(at20.ok());
  CHECK(at20->Get(out) == 10);
  auto at3000 = BindSymbols(g, 4, {{"frames", 3000}});
  REQUIRE(at3000.ok());
  CHECK(at3000->Get(out) == 1500);
  // Nothing bound: nothing to determine.
  auto unbound = BindSymbols(g, std::nullopt, {});
  REQUIRE(unbound.ok());
  CHECK_FALSE(unbound->Get(out).has_value());
}

// x [batch, seq, 8] reshaped to [batch, seq // window, window, 8] with window 4, the division
// computed from x's shape as torch.onnx writes `x.reshape(b, n // w, w, c)`.
ProtoModel WindowReshape(const std::string& divided_axis) {
  ProtoModel m(17);
  m.Input("x", onnx::TensorProto::FLOAT, {"batch", "seq", 8});
  m.Int64s("axis_batch", {0});
  m.Int64s("axis_seq", {1});
  m.Int64s("window", {4});
  m.Int64s("channels", {8});
  m.Node("Shape", {"x"}, {"shape"});
  m.Node("Gather", {"shape", "axis_batch"}, {"b"});
  m.Node("Gather", {"shape", "axis_seq"}, {"n"});
  m.Node("Div", {divided_axis, "window"}, {"groups"});
  // [batch, seq // 4, 4, 8], or [batch // 4, 4, seq, 8] where the division follows the batch.
  const std::vector<std::string> parts =
      divided_axis == "n" ? std::vector<std::string>{"b", "groups", "window", "channels"}
                          : std::vector<std::string>{"groups", "window", "n", "channels"};
  testing::SetInt(m.Node("Concat", parts, {"target"}), "axis", 0);
  m.Node("Reshape", {"x", "target"}, {"y"});
  m.Output("y", onnx::TensorProto::FLOAT,
           divided_axis == "n" ? std::vector<testing::ProtoDim>{"batch", "y_groups", 4, 8}
                               : std::vector<testing::ProtoDim>{"y_groups", 4, "seq", 8});
  return m;
}

TEST_CASE("a Div of a symbol is a symbol the bound axis determines", "[symbols]") {
  const Graph g = WindowReshape("n").Import("window_reshape.onnx");
  const SymbolId groups = SymbolAt(g, "y", 1);
  // seq = 12, window 4: 12 // 4 = 3 groups.
  auto bindings = BindSymbols(g, std::nullopt, {{"seq", 12}});
  REQUIRE(bindings.ok());
  CHECK(bindings->Get(groups) == 3);
  // [batch, 3, 4, 8] at batch 2: 2 * 3 * 4 * 8 = 192 elements.
  Bindings at2 = *bindings;
  at2.Bind(*g.batch_symbol(), 2);
  CHECK(g.value(*g.FindValue("y")).shape.NumElements().Evaluate(at2).value() == 192);
}

TEST_CASE("a symbol that follows the batch is left to the micro-batch", "[symbols]") {
  const Graph g = WindowReshape("b").Import("batch_reshape.onnx");
  const SymbolId groups = SymbolAt(g, "y", 0);
  // --batch 8 would make batch // 4 = 2, but the planner tries other micro-batches: unbound.
  auto bindings = BindSymbols(g, 8, {{"seq", 12}});
  REQUIRE(bindings.ok());
  CHECK_FALSE(bindings->Get(groups).has_value());
}

}  // namespace
}  // namespace memplan
