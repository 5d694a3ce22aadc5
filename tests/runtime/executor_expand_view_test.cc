// The executor runs an Expand that views its input with a broadcast (zero) stride: the view is
// larger than the buffer it reads (ViT's class token, `cls.expand(batch, -1, -1)`), and the
// backend may materialise it. The token's gradient equals the one a broadcasting Mul gives.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>

#include "tests/graph/proto_model.h"
#include "tests/runtime/executor_test_support.h"

namespace memplan {
namespace {

using testing::ProtoModel;

// y = concat(token broadcast over the batch, x) along the sequence axis; the batch is bound to 3.
Graph ClassTokenModel(bool expand) {
  ProtoModel m(/*opset=*/13);
  m.Input("x", onnx::TensorProto::FLOAT, {"batch", 2, 4});
  m.Initializer("cls", onnx::TensorProto::FLOAT, {1, 1, 4});
  // The target shape [batch, 1, 4] computed from x, as exporters write it.
  m.Int64s("zero", {0});
  m.Int64s("one", {1});
  m.Int64s("rest", {1, 4});
  m.Node("Shape", {"x"}, {"x_shape"});
  m.Node("Slice", {"x_shape", "zero", "one"}, {"batch"});
  testing::SetInt(m.Node("Concat", {"batch", "rest"}, {"shape"}), "axis", 0);
  if (expand) {
    m.Node("Expand", {"cls", "shape"}, {"tokens"});
  } else {
    // The same rows computed: the token times ones of that shape (a broadcasting Mul).
    m.Node("ConstantOfShape", {"shape"}, {"ones"}).add_attribute()->CopyFrom([] {
      onnx::AttributeProto a;
      a.set_name("value");
      a.set_type(onnx::AttributeProto::TENSOR);
      a.mutable_t()->set_data_type(onnx::TensorProto::FLOAT);
      a.mutable_t()->add_dims(1);
      a.mutable_t()->add_float_data(1.0f);
      return a;
    }());
    m.Node("Mul", {"cls", "ones"}, {"tokens"});
  }
  testing::SetInt(m.Node("Concat", {"tokens", "x"}, {"y"}), "axis", 1);
  m.Output("y", onnx::TensorProto::FLOAT, {{"batch", 3, 4}});
  return m.Import(expand ? "expand_token.onnx" : "broadcast_token.onnx");
}

std::vector<float> TokenGradient(const Graph& graph) {
  return testing::OnlyParameterGradient(graph, /*rows=*/3, /*seed=*/11);
}

// The gradients of a four-element parameter by two models: the same sums, perhaps in another
// order (1e-6 relative leaves margin), and not all zero.
void CheckSameFourGradients(const std::vector<float>& viewed, const std::vector<float>& copied) {
  REQUIRE(viewed.size() == 4);
  REQUIRE(copied.size() == 4);
  for (size_t i = 0; i < 4; ++i) {
    INFO("element " << i);
    CHECK(viewed[i] == Approx(copied[i]).epsilon(1e-6));
  }
  CHECK(std::any_of(viewed.begin(), viewed.end(), [](float g) { return g != 0.0f; }));
}

TEST_CASE("executor: an Expand view larger than its input runs", "[executor][views]") {
  const std::vector<float> viewed = TokenGradient(ClassTokenModel(/*expand=*/true));
  const std::vector<float> copied = TokenGradient(ClassTokenModel(/*expand=*/false));  // Mul
  CheckSameFourGradients(viewed, copied);
}

// HF's repeat_kv on an activation: h = x * w, then h[:, :, None].expand(b, 2, 2, 4).reshape(b, 4,
// 4). The Expand broadcasts, so the gradient of its input is summed into a tensor of the input's
// shape (at::sum_to), not a view of the larger output gradient. `expand` false: the same rows
// copied with a Concat.
Graph RepeatKvModel(bool expand) {
  ProtoModel m(/*opset=*/13);
  m.Input("x", onnx::TensorProto::FLOAT, {"batch", 2, 4});
  m.Initializer("w", onnx::TensorProto::FLOAT, {4});
  m.Int64s("axes", {2});
  m.Int64s("repeat", {1, 1, 2, 1});
  m.Int64s("merged", {0, 4, 4});
  m.Node("Mul", {"x", "w"}, {"h"});
  m.Node("Unsqueeze", {"h", "axes"}, {"h1"});
  if (expand)
    m.Node("Expand", {"h1", "repeat"}, {"rep"});
  else
    testing::SetInt(m.Node("Concat", {"h1", "h1"}, {"rep"}), "axis", 2);
  m.Node("Reshape", {"rep", "merged"}, {"y"});
  m.Output("y", onnx::TensorProto::FLOAT, {{"batch", 4, 4}});
  return m.Import(expand ? "repeat_kv_expand.onnx" : "repeat_kv_concat.onnx");
}

TEST_CASE("executor: a broadcasting Expand of an activation sums its gradient",
          "[executor][views]") {
  const std::vector<float> viewed = TokenGradient(RepeatKvModel(/*expand=*/true));
  const std::vector<float> copied = TokenGradient(RepeatKvModel(/*expand=*/false));  // Concat
  CheckSameFourGradients(viewed, copied);
}

}  // namespace
}  // namespace memplan
