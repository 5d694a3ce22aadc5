// Contiguity of views (analyzer/derivation/view_aliasing.h, graph/ops/view_layout.h): a Slice or
// Split along an inner axis, a Transpose and a broadcasting Expand are strided views; a Reshape
// of one copies it where torch's reshape cannot view it, and so does matmul's reshape of its
// operands (the copy is what mm/bmm save). Hand-built models at batch 2, fp32,
// loss = sum(y); saved bytes exclude parameters. Each total is also what PyTorch 1.13 autograd
// keeps (saved_tensors_hooks, one count per storage) for the torch code quoted in the case.
#include <catch2/catch.hpp>

#include <string>

#include "analyzer/derivation/view_aliasing.h"
#include "graph/onnx_import.h"
#include "graph/ops/op_registry.h"
#include "tests/analyzer/derivation/program_test_derive.h"
#include "tests/graph/proto_model.h"

namespace memplan {
namespace {

using testing::ProtoModel;
using testing::SetInt;
using testing::SetInts;
using testing::SimulateSumLoss;

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
  SetInts(m.Node("Transpose", {"s"}, {"t"}), "perm", {1, 0, 2});
  m.Node("Identity", {"t"}, {"t2"});
  SetInt(m.Node("Split", {"t2", "sizes"}, {"a", "c"}), "axis", 0);
  m.Node("Reshape", {"c", "shape"}, {"r"});
  m.Output("r", onnx::TensorProto::FLOAT, {{2, "batch", 2, 4}});
  return m;
}

// nn.MultiheadAttention(batch_first=True)'s in-projection of a transposed input, beside a
// consumer that keeps the input itself: x [batch, 4, 8] -> MatMul(W [8, 8]) -> s;
// a = MatMul(Transpose(s, 1 0 2), Wa [8, 4]) [4, batch, 4]; c = MatMul(s, Wc [8, 4]);
// y = Transpose(a, 1 0 2) + c.
ProtoModel TransposedFoldModel() {
  ProtoModel m(/*opset=*/13);
  m.Input("x", onnx::TensorProto::FLOAT, {"batch", 4, 8});
  m.Initializer("W", onnx::TensorProto::FLOAT, {8, 8});
  m.Initializer("Wa", onnx::TensorProto::FLOAT, {8, 4});
  m.Initializer("Wc", onnx::TensorProto::FLOAT, {8, 4});
  m.Node("MatMul", {"x", "W"}, {"s"});
  SetInts(m.Node("Transpose", {"s"}, {"t"}), "perm", {1, 0, 2});
  m.Node("MatMul", {"t", "Wa"}, {"a"});
  m.Node("MatMul", {"s", "Wc"}, {"c"});
  SetInts(m.Node("Transpose", {"a"}, {"at"}), "perm", {1, 0, 2});
  m.Node("Add", {"at", "c"}, {"y"});
  m.Output("y", onnx::TensorProto::FLOAT, {{"batch", 4, 4}});
  return m;
}

// A learned query token broadcast over the batch into a projection (BLIP-2's Q-Former, DETR):
// q [1, 4, 8] -> Expand([batch, 4, 8]) -> MatMul(Wq [8, 8]) -> y. The batch comes from x.
ProtoModel ExpandedTokenModel() {
  ProtoModel m(/*opset=*/13);
  m.Input("x", onnx::TensorProto::FLOAT, {"batch", 4, 8});
  m.Initializer("q", onnx::TensorProto::FLOAT, {1, 4, 8});
  m.Initializer("Wq", onnx::TensorProto::FLOAT, {8, 8});
  m.Node("Shape", {"x"}, {"shape"});
  m.Node("Expand", {"q", "shape"}, {"e"});
  m.Node("MatMul", {"e", "Wq"}, {"y"});
  m.Output("y", onnx::TensorProto::FLOAT, {{"batch", 4, 8}});
  return m;
}

// HF attention scores: h1 = x @ Wq, h2 = x @ Wk ([batch, 4, 8]); q = h1 viewed as 2 heads of 4
// and permuted (0 2 1 3) [batch, 2, 4, 4]; kT = h2 likewise permuted (0 2 3 1); y = q @ kT.
ProtoModel AttentionScoresModel() {
  ProtoModel m(/*opset=*/13);
  m.Input("x", onnx::TensorProto::FLOAT, {"batch", 4, 8});
  m.Initializer("Wq", onnx::TensorProto::FLOAT, {8, 8});
  m.Initializer("Wk", onnx::TensorProto::FLOAT, {8, 8});
  m.Int64s("heads", {0, 4, 2, 4});
  m.Node("MatMul", {"x", "Wq"}, {"h1"});
  m.Node("MatMul", {"x", "Wk"}, {"h2"});
  m.Node("Reshape", {"h1", "heads"}, {"r1"});
  m.Node("Reshape", {"h2", "heads"}, {"r2"});
  SetInts(m.Node("Transpose", {"r1"}, {"q"}), "perm", {0, 2, 1, 3});
  SetInts(m.Node("Transpose", {"r2"}, {"kT"}), "perm", {0, 2, 3, 1});
  m.Node("MatMul", {"q", "kT"}, {"y"});
  m.Output("y", onnx::TensorProto::FLOAT, {{"batch", 2, 4, 4}});
  return m;
}

// The contiguous copies the program saves in an operand's place (SaveContiguousCopy).
int CountSavedCopies(const Graph& graph) {
  ProgramOptions options;
  options.loss = LossKind::kSum;
  auto program = DeriveTrainingProgram(graph, options);
  REQUIRE(program.ok());
  int copies = 0;
  for (const Buffer& b : program->buffers)
    if (b.role == BufferRole::kSavedExtra && ContiguousCopyInput(b.saved_name)) ++copies;
  return copies;
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
  CHECK(SimulateSumLoss(graph).saved_activation_bytes == 384);
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
  CHECK(SimulateSumLoss(graph).saved_activation_bytes == 640);
}

TEST_CASE("a strided view stays strided through views that accept it", "[views]") {
  // Transpose(1, 0, 2) of [batch, 4, 8] moves the batch axis: strided (strides [8, 32, 1] at
  // batch 2); Identity keeps that, and a leading-axis Split of a strided tensor is strided too.
  // The Reshape after it only splits the last dim, which torch's reshape views
  // (t.split(2)[1].reshape(2, 2, 2, 4)._base is s): a view, still strided.
  const Graph graph = LeadingSplitModel().Import("leading_split.onnx");
  const ViewAliasing v = Views(graph);
  CHECK(IsStrided(graph, v, "t"));
  CHECK(IsStrided(graph, v, "t2"));
  CHECK(IsStrided(graph, v, "c"));
  CHECK(IsView(graph, v, "r"));
  CHECK(IsStrided(graph, v, "r"));
}

TEST_CASE("matmul saves a copy of an operand its reshape cannot view", "[views][saved]") {
  // torch: s = x @ W; a = s.transpose(0, 1) @ Wa; c = s @ Wc; y = a.transpose(0, 1) + c.
  // matmul folds the transposed [4, 2, 8] into rows with reshape(-1, 8), which cannot view it
  // (strides [8, 32, 1]), so mm saves a copy (256 B); s is kept by s @ Wc (256 B) and x by
  // x @ W (256 B): 768. Saving the transpose as a view would share s's storage: 512.
  const Graph graph = TransposedFoldModel().Import("transposed_fold.onnx");
  CHECK(SimulateSumLoss(graph).saved_activation_bytes == 768);
  CHECK(CountSavedCopies(graph) == 1);
}

TEST_CASE("a broadcast query token is saved as its copy", "[views][saved]") {
  // torch: q.expand(2, 4, 8) @ Wq (q a parameter): the expanded batch has stride 0, the fold's
  // reshape copies it and mm saves the copy [2, 4, 8] = 256 B (the parameter itself is not an
  // activation). As a view it would be 0 B.
  const Graph graph = ExpandedTokenModel().Import("expanded_token.onnx");
  CHECK(SimulateSumLoss(graph).saved_activation_bytes == 256);
  CHECK(CountSavedCopies(graph) == 1);
}

TEST_CASE("batched matmul saves copies of permuted heads", "[views][saved]") {
  // torch: q = (x @ Wq).reshape(2, 4, 2, 4).permute(0, 2, 1, 3);
  // kT = (x @ Wk).reshape(2, 4, 2, 4).permute(0, 2, 3, 1); q @ kT. bmm reshapes each operand to
  // [4, 4, 4]; neither merges its batch and head dims (strides 32 and 4), so both are copied
  // and saved (256 B each), and x is kept by both projections (256 B): 768. torch 1.13's
  // saved-tensor hooks see the same three 256-B storages.
  const Graph graph = AttentionScoresModel().Import("attention_scores.onnx");
  CHECK(SimulateSumLoss(graph).saved_activation_bytes == 768);
  CHECK(CountSavedCopies(graph) == 2);
}

// MaxViT's relative-position attention with einsum: qkv = x @ W [batch, 4, 24]; q, k, v = its
// three Splits, each viewed as 2 heads of 4 and permuted (0 2 1 3) [batch, 2, 4, 4];
// s = einsum("bhid,bhjd->bhij", q, k * c); y = einsum("bhij,bhjd->bhid", s, v).
ProtoModel EinsumHeadsModel() {
  ProtoModel m(/*opset=*/13);
  m.Input("x", onnx::TensorProto::FLOAT, {"batch", 4, 8});
  m.Initializer("W", onnx::TensorProto::FLOAT, {8, 24});
  m.Int64s("sizes", {8, 8, 8}).Int64s("heads", {0, 4, 2, 4});
  m.ConstantFloats("c", {});
  m.Node("MatMul", {"x", "W"}, {"qkv"});
  SetInt(m.Node("Split", {"qkv", "sizes"}, {"q0", "k0", "v0"}), "axis", 2);
  for (const char* head : {"q", "k", "v"}) {
    const std::string t = head;
    m.Node("Reshape", {t + "0", "heads"}, {t + "1"});
    SetInts(m.Node("Transpose", {t + "1"}, {t}), "perm", {0, 2, 1, 3});
  }
  m.Node("Mul", {"k", "c"}, {"kc"});
  testing::SetString(m.Node("Einsum", {"q", "kc"}, {"s"}), "equation", "bhid,bhjd->bhij");
  testing::SetString(m.Node("Einsum", {"s", "v"}, {"y"}), "equation", "bhij,bhjd->bhid");
  m.Output("y", onnx::TensorProto::FLOAT, {{"batch", 2, 4, 4}});
  return m;
}

TEST_CASE("einsum saves copies of permuted heads its bmm cannot view", "[views][saved]") {
  // torch: q, k, v = (x @ W).chunk(3, -1), each .reshape(2, 4, 2, 4).permute(0, 2, 1, 3);
  // s = einsum("bhid,bhjd->bhij", q, k * 0.5); einsum("bhij,bhjd->bhid", s, v). einsum runs bmm
  // on [4, 4, 4] reshapes of its operands; q and v cannot merge batch and head (strides 96 and
  // 4) and are copied, s is viewed; each 256 B, x 256 B: 1280 B (torch 1.13: these and the
  // 8-byte scalar 0.5). torch also copies k * 0.5, whose output keeps k's permuted layout, and
  // frees it; memplan writes it dense and keeps it: the same 256 B. Saving q and v as views
  // would keep all of qkv (768 B) besides k * 0.5: 1536.
  const Graph graph = EinsumHeadsModel().Import("einsum_heads.onnx");
  CHECK(SimulateSumLoss(graph).saved_activation_bytes == 1280);
  CHECK(CountSavedCopies(graph) == 2);
}

TEST_CASE("a last-axis slice folds into rows without a copy", "[views][saved]") {
  // torch: s = x @ W; s[:, :, 0:4] @ W2. The slice [2, 4, 4] (strides [32, 8, 1]) reshapes to
  // [8, 4] as a view (32 = 4 * 8), so mm saves the slice, which keeps s: x 256 B + s 256 B = 512,
  // no copy.
  ProtoModel m(/*opset=*/13);
  m.Input("x", onnx::TensorProto::FLOAT, {"batch", 4, 8});
  m.Initializer("W", onnx::TensorProto::FLOAT, {8, 8});
  m.Initializer("W2", onnx::TensorProto::FLOAT, {4, 4});
  m.Int64s("starts", {0}).Int64s("ends", {4}).Int64s("axes", {2});
  m.Node("MatMul", {"x", "W"}, {"s"});
  m.Node("Slice", {"s", "starts", "ends", "axes"}, {"c"});
  m.Node("MatMul", {"c", "W2"}, {"y"});
  m.Output("y", onnx::TensorProto::FLOAT, {{"batch", 4, 4}});
  const Graph graph = m.Import("slice_fold.onnx");
  CHECK(SimulateSumLoss(graph).saved_activation_bytes == 512);
  CHECK(CountSavedCopies(graph) == 0);
}

TEST_CASE("the registry says which views are strided", "[views]") {
  const OpRegistry& registry = OpRegistry::Get();
  for (const char* op : {"Reshape", "Squeeze", "Transpose", "Slice", "Expand", "Gather"}) {
    INFO(op);
    const OpSchema* schema = registry.Find(op, "");
    REQUIRE(schema != nullptr);
    CHECK(schema->is_view);
    CHECK(static_cast<bool>(schema->view_strides));
  }
  CHECK(registry.Find("Slice", "")->view_is_partial);
}

}  // namespace
}  // namespace memplan
