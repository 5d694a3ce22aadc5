// Contiguity of views (analyzer/derivation/view_aliasing.h, graph/ops/view_layout.h): a Slice or
// Split along an inner axis, a Transpose and a broadcasting Expand are strided views, and the
// Reshape after one copies it, as torch's reshape does. Hand-built models at batch 2, fp32,
// loss = sum(y); saved bytes exclude parameters. Each total is also what PyTorch 1.13 autograd
// keeps (saved_tensors_hooks, one count per storage) for the torch code quoted in the case.
#include <catch2/catch.hpp>

#include <string>

#include "analyzer/derivation/view_aliasing.h"
#include "analyzer/exact_allocator.h"
#include "analyzer/program_derivation.h"
#include "analyzer/simulator.h"
#include "graph/onnx_import.h"
#include "graph/ops/op_registry.h"
#include "tests/graph/proto_model.h"

namespace memplan {
namespace {

using testing::ProtoModel;

onnx::NodeProto& WithAxis(onnx::NodeProto& node, int64_t axis) {
  auto* a = node.add_attribute();
  a->set_name("axis");
  a->set_type(onnx::AttributeProto::INT);
  a->set_i(axis);
  return node;
}

// x [batch, 4, 8] -> MatMul(W [8, 8]) -> s; c = Slice(s, last axis 0:4) [batch, 4, 4];
// r = Reshape(c, [0, 16]); y = MatMul(r, W3 [16, 4]).
ProtoModel SliceReshapeModel() {
  ProtoModel m(/*opset=*/13);
  m.Input("x", onnx::TensorProto::FLOAT, {"batch", 4, 8});
  m.Initializer("W", onnx::TensorProto::FLOAT, {8, 8});
  m.Initializer("W3", onnx::TensorProto::FLOAT, {16, 4});
  m.Int64s("starts", {0}).Int64s("ends", {4}).Int64s("axes", {2}).Int64s("shape", {0, 16});
  m.Node("MatMul", {"x", "W"}, {"s"});
  m.Node("Slice", {"s", "starts", "ends", "axes"}, {"c"});
  m.Node("Reshape", {"c", "shape"}, {"r"});
  m.Node("MatMul", {"r", "W3"}, {"y"});
  m.Output("y", onnx::TensorProto::FLOAT, {{"batch", 4}});
  return m;
}

// HF's repeat_kv: x [batch, 4, 8] -> MatMul(Wk [8, 4]) -> k [batch, 4, 4] -> Unsqueeze(2)
// -> Expand([1, 1, 3, 1]) [batch, 4, 3, 4] -> Reshape([0, 12, 4]) -> MatMul(W4 [4, 4]) -> y.
ProtoModel RepeatKvModel() {
  ProtoModel m(/*opset=*/13);
  m.Input("x", onnx::TensorProto::FLOAT, {"batch", 4, 8});
  m.Initializer("Wk", onnx::TensorProto::FLOAT, {8, 4});
  m.Initializer("W4", onnx::TensorProto::FLOAT, {4, 4});
  m.Int64s("unsq", {2}).Int64s("reps", {1, 1, 3, 1}).Int64s("shape", {0, 12, 4});
  m.Node("MatMul", {"x", "Wk"}, {"k"});
  m.Node("Unsqueeze", {"k", "unsq"}, {"u"});
  m.Node("Expand", {"u", "reps"}, {"e"});
  m.Node("Reshape", {"e", "shape"}, {"r"});
  m.Node("MatMul", {"r", "W4"}, {"y"});
  m.Output("y", onnx::TensorProto::FLOAT, {{"batch", 12, 4}});
  return m;
}

// x [batch, 4, 8] -> MatMul(W [8, 8]) -> s -> Transpose(1, 0, 2) [4, batch, 8] -> t ->
// Identity -> t2 -> Split(axis 0, [2, 2]) -> a, c [2, batch, 8] -> Reshape(c, [0, 0, 2, 4]) -> r.
ProtoModel LeadingSplitModel() {
  ProtoModel m(/*opset=*/13);
  m.Input("x", onnx::TensorProto::FLOAT, {"batch", 4, 8});
  m.Initializer("W", onnx::TensorProto::FLOAT, {8, 8});
  m.Int64s("sizes", {2, 2}).Int64s("shape", {0, 0, 2, 4});
  m.Node("MatMul", {"x", "W"}, {"s"});
  auto& t = m.Node("Transpose", {"s"}, {"t"});
  auto* perm = t.add_attribute();
  perm->set_name("perm");
  perm->set_type(onnx::AttributeProto::INTS);
  for (int64_t p : {1, 0, 2}) perm->add_ints(p);
  m.Node("Identity", {"t"}, {"t2"});
  WithAxis(m.Node("Split", {"t2", "sizes"}, {"a", "c"}), 0);
  m.Node("Reshape", {"c", "shape"}, {"r"});
  m.Output("r", onnx::TensorProto::FLOAT, {{2, "batch", 2, 4}});
  return m;
}

SimulationResult SimulateModel(const Graph& graph) {
  ProgramOptions options;
  options.loss = LossKind::kSum;
  auto program = DeriveTrainingProgram(graph, options);
  REQUIRE(program.ok());
  Bindings bindings(&program->symbols);
  bindings.Bind(*program->symbols.Find("batch"), 2);
  ExactAllocator exact;
  auto r = Simulate(*program, bindings, exact);
  REQUIRE(r.ok());
  return *r;
}

ViewAliasing Views(const Graph& graph) {
  auto order = graph.TopologicalOrder();
  REQUIRE(order.ok());
  return DecideViews(graph, OpRegistry::Get(), *order);
}

bool IsView(const Graph& graph, const ViewAliasing& v, const std::string& output) {
  for (size_t n = 0; n < graph.num_nodes(); ++n)
    for (ValueId o : graph.node(NodeId(n)).outputs)
      if (o.valid() && graph.value(o).name == output) return v.node_is_view[n];
  FAIL("no node writes " << output);
  return false;
}

bool IsStrided(const Graph& graph, const ViewAliasing& v, const std::string& name) {
  for (size_t i = 0; i < graph.num_values(); ++i)
    if (graph.value(ValueId(i)).name == name) return v.value_is_strided[i];
  FAIL("no value " << name);
  return false;
}

TEST_CASE("a reshape of an inner-axis slice copies it", "[views][saved]") {
  // torch: s = x @ W; c = s[:, :, 0:4]; c.reshape(2, 16) @ W3. The slice is strided (batch
  // before its axis), so reshape copies it: x [2, 4, 8] = 256 B (MatMul's saved input) + the
  // copy [2, 16] = 128 B (the second MatMul's) = 384; s itself is not kept.
  const Graph graph = SliceReshapeModel().Import("slice_reshape.onnx");
  const ViewAliasing v = Views(graph);
  CHECK(IsView(graph, v, "c"));
  CHECK(IsStrided(graph, v, "c"));
  CHECK_FALSE(IsView(graph, v, "r"));
  CHECK_FALSE(IsStrided(graph, v, "r"));
  CHECK(SimulateModel(graph).saved_activation_bytes == 384);
}

TEST_CASE("repeat_kv: a reshape of a broadcasting expand copies it", "[views][saved]") {
  // torch: k = x @ Wk; k.unsqueeze(2).expand(2, 4, 3, 4).reshape(2, 12, 4) @ W4. x (256 B) and
  // the reshaped copy [2, 12, 4] = 384 B: 640. As views both would keep only k (128 B): 384.
  const Graph graph = RepeatKvModel().Import("repeat_kv.onnx");
  const ViewAliasing v = Views(graph);
  CHECK(IsView(graph, v, "u"));
  CHECK_FALSE(IsStrided(graph, v, "u"));  // unsqueeze keeps the layout dense
  CHECK(IsStrided(graph, v, "e"));
  CHECK_FALSE(IsView(graph, v, "r"));
  CHECK(SimulateModel(graph).saved_activation_bytes == 640);
}

TEST_CASE("a strided view stays strided through views that accept it", "[views]") {
  // Transpose(1, 0, 2) of [batch, 4, 8] moves the batch axis: strided; Identity keeps that, and a
  // leading-axis Split of a strided tensor is strided too, so the Reshape after it copies.
  const Graph graph = LeadingSplitModel().Import("leading_split.onnx");
  const ViewAliasing v = Views(graph);
  CHECK(IsStrided(graph, v, "t"));
  CHECK(IsStrided(graph, v, "t2"));
  CHECK(IsStrided(graph, v, "c"));
  CHECK_FALSE(IsView(graph, v, "r"));
}

TEST_CASE("the registry says which views are strided", "[views]") {
  const OpRegistry& registry = OpRegistry::Get();
  const OpSchema* reshape = registry.Find("Reshape", "");
  const OpSchema* squeeze = registry.Find("Squeeze", "");
  const OpSchema* transpose = registry.Find("Transpose", "");
  const OpSchema* slice = registry.Find("Slice", "");
  REQUIRE(reshape != nullptr);
  REQUIRE(squeeze != nullptr);
  REQUIRE(transpose != nullptr);
  REQUIRE(slice != nullptr);
  CHECK(reshape->view_needs_contiguous_input);
  CHECK_FALSE(squeeze->view_needs_contiguous_input);  // torch.squeeze views any layout
  CHECK(transpose->view_stays_contiguous);
  CHECK(slice->is_view);
  CHECK(slice->view_is_partial);
}

}  // namespace
}  // namespace memplan
