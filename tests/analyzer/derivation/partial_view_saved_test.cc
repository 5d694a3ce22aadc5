// Split's and Slice's outputs are views of their input, as torch.split's and slicing's are: a
// consumer that saves one chunk keeps the whole input storage alive, and the chunks have no bytes
// of their own (graph/ops/op_schema.h, view_is_partial). Hand-built model at
// batch 2, fp32, loss = sum(y):
//
//   x [batch, 4, 8] -> MatMul(W [8, 8]) -> Add(b [8]) -> s [batch, 4, 8]
//   s -> Split (or Slice) on the last axis -> a [batch, 4, 4], c [batch, 4, 4]
//   y = Concat(a, MatMul(c, W2 [4, 4]))
//
// Saved for backward, parameters excluded: MatMul(x, W) keeps x (W requires grad, x does not):
// [2, 4, 8] = 256 bytes. Add keeps nothing. MatMul(c, W2) keeps c, a view of s: s's whole
// storage, 256 bytes, not c's 128. Split, Slice and Concat keep nothing. Total 512 bytes.
// PyTorch 1.13 on CPU agrees: saved_tensors_hooks over `s = x @ W + b; a, c = s.split(4, 2);
// torch.cat([a, c @ W2], 2)` (and over `s[:, :, 4:]`, `s[:, :, 0:4] @ W2`) see x (256 bytes)
// and c / the slice, whose storage is s's 256 bytes, once each per storage: 512.
#include <catch2/catch.hpp>

#include <string>

#include "graph/onnx_import.h"
#include "graph/ops/op_registry.h"
#include "tests/analyzer/derivation/program_test_derive.h"
#include "tests/graph/proto_model.h"

namespace memplan::testing {
namespace {

ProtoModel ChunkModel(bool use_slice) {
  ProtoModel m(/*opset=*/13);
  m.Input("x", onnx::TensorProto::FLOAT, {"batch", 4, 8});
  m.Initializer("W", onnx::TensorProto::FLOAT, {8, 8});
  m.Initializer("b", onnx::TensorProto::FLOAT, {8});
  m.Initializer("W2", onnx::TensorProto::FLOAT, {4, 4});
  m.Node("MatMul", {"x", "W"}, {"h"});
  m.Node("Add", {"h", "b"}, {"s"});
  if (use_slice) {
    m.Int64s("starts_a", {4}).Int64s("ends_a", {8}).Int64s("starts_c", {0}).Int64s("ends_c", {4});
    m.Int64s("axes", {2});
    m.Node("Slice", {"s", "starts_a", "ends_a", "axes"}, {"a"});
    m.Node("Slice", {"s", "starts_c", "ends_c", "axes"}, {"c"});
  } else {
    m.Int64s("sizes", {4, 4});
    SetInt(m.Node("Split", {"s", "sizes"}, {"a", "c"}), "axis", 2);
  }
  m.Node("MatMul", {"c", "W2"}, {"m"});
  SetInt(m.Node("Concat", {"a", "m"}, {"y"}), "axis", 2);
  m.Output("y", onnx::TensorProto::FLOAT, {{"batch", 4, 8}});
  return m;
}

TEST_CASE("Split and Slice are partial views in the registry", "[views][saved]") {
  for (const char* op : {"Split", "Slice"}) {
    const OpSchema* schema = OpRegistry::Get().Find(op, "");
    REQUIRE(schema != nullptr);
    CHECK(schema->is_view);
    CHECK(schema->view_is_partial);
  }
  // A Reshape's output is all of its input: its gradient is a view too.
  const OpSchema* reshape = OpRegistry::Get().Find("Reshape", "");
  REQUIRE(reshape != nullptr);
  CHECK(reshape->is_view);
  CHECK_FALSE(reshape->view_is_partial);
}

TEST_CASE("a saved chunk of a Split keeps the whole input alive", "[views][saved]") {
  CHECK(SimulateSumLoss(ChunkModel(/*use_slice=*/false).Import("split_view.onnx"))
            .saved_activation_bytes == 512);
}

TEST_CASE("a saved Slice keeps the whole input alive", "[views][saved]") {
  CHECK(SimulateSumLoss(ChunkModel(/*use_slice=*/true).Import("slice_view.onnx"))
            .saved_activation_bytes == 512);
}

}  // namespace
}  // namespace memplan::testing
