// A Cast to the dtype its input already has is torch's `x.to(dtype)` returning x: an alias, not
// a copy (analyzer/derivation/view_aliasing.h, AliasSameDTypeCasts). HF's eager attention writes
// softmax(..., dtype=float32).to(query.dtype), which an fp32 export keeps as Cast(to=FLOAT).
// Hand-built models at batch 2, fp32, loss = sum(y); saved bytes exclude parameters. Each total
// is also what PyTorch 1.13 autograd keeps (saved_tensors_hooks, one count per storage) for the
// torch code quoted in the case.
#include <catch2/catch.hpp>

#include "tests/analyzer/derivation/program_test_derive.h"
#include "tests/graph/proto_model.h"

namespace memplan {
namespace {

using testing::ProtoModel;
using testing::SetInt;
using testing::SimulateSumLoss;

// x [batch, 4, 8] -> MatMul(W [8, 8]) -> Softmax(-1) -> p -> Cast(to)* -> c -> MatMul(W2 [8, 4]).
Graph SoftmaxCastModel(const std::vector<int64_t>& casts) {
  ProtoModel m(/*opset=*/13);
  m.Input("x", onnx::TensorProto::FLOAT, {"batch", 4, 8});
  m.Initializer("W", onnx::TensorProto::FLOAT, {8, 8});
  m.Initializer("W2", onnx::TensorProto::FLOAT, {8, 4});
  m.Node("MatMul", {"x", "W"}, {"s"});
  SetInt(m.Node("Softmax", {"s"}, {"p"}), "axis", -1);
  std::string cur = "p";
  for (size_t i = 0; i < casts.size(); ++i) {
    const std::string next = "c" + std::to_string(i);
    SetInt(m.Node("Cast", {cur}, {next}), "to", casts[i]);
    cur = next;
  }
  m.Node("MatMul", {cur, "W2"}, {"y"});
  m.Output("y", onnx::TensorProto::FLOAT, {{"batch", 4, 4}});
  return m.Import("softmax_cast.onnx");
}

TEST_CASE("a cast to the same dtype aliases its input", "[views][saved]") {
  // torch: p = softmax(x @ W, -1); (p.to(torch.float32) @ W2). x [2, 4, 8] = 256 B (the first
  // MatMul's), p 256 B (softmax's output, and the second MatMul's input: the same storage):
  // 512. A copying Cast would keep a second 256 B.
  CHECK(SimulateSumLoss(SoftmaxCastModel({onnx::TensorProto::FLOAT})).saved_activation_bytes ==
        512);
  // Two of them (HF llama: .to(float32) then .to(query.dtype)) alias as well.
  CHECK(SimulateSumLoss(SoftmaxCastModel({onnx::TensorProto::FLOAT, onnx::TensorProto::FLOAT}))
            .saved_activation_bytes == 512);
}

TEST_CASE("a cast that changes the dtype copies", "[views][saved]") {
  // torch: (softmax(x @ W, -1).half().float() @ W2): x 256 B, p 256 B, and the fp32 copy the
  // second MatMul saves, 256 B (the fp16 one between is read only by the next cast): 768.
  CHECK(SimulateSumLoss(SoftmaxCastModel({onnx::TensorProto::FLOAT16, onnx::TensorProto::FLOAT}))
            .saved_activation_bytes == 768);
}

}  // namespace
}  // namespace memplan
