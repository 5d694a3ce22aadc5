// The executor computes with Constant tables larger than shape folding keeps (rotary cos/sin,
// additive masks: torch.onnx writes non-persistent buffers as Constant nodes). Before, a float
// Constant of more than 64 elements kept no values and `verify` of a LLaMA-style export stopped
// with "Constant ... is too large for the importer to keep".
#include <catch2/catch.hpp>

#include <string>
#include <vector>

#include "tests/graph/proto_model.h"
#include "tests/runtime/executor_test_support.h"

namespace memplan {
namespace {

using testing::ProtoModel;

// A Constant node holding `values` of `dims` (floats).
void FloatConstant(ProtoModel& m, const std::string& output, std::vector<int64_t> dims,
                   const std::vector<float>& values) {
  auto* a = m.Node("Constant", {}, {output}).add_attribute();
  a->set_name("value");
  a->set_type(onnx::AttributeProto::TENSOR);
  a->mutable_t()->set_data_type(onnx::TensorProto::FLOAT);
  for (int64_t d : dims) a->mutable_t()->add_dims(d);
  for (float v : values) a->mutable_t()->add_float_data(v);
}

// y = x W + table, table [4, 32] = 128 elements, x [batch, 4, 8], W [8, 32]. With `split` the
// same table is two [2, 32] Constants (64 elements each, within what folding keeps) joined by a
// Concat: the same model computed from constants the executor could always read.
Graph TableModel(bool split) {
  std::vector<float> table(128);
  for (size_t i = 0; i < table.size(); ++i) table[i] = 0.01f * static_cast<float>(i) - 0.5f;
  ProtoModel m(/*opset=*/13);
  m.Input("x", onnx::TensorProto::FLOAT, {"batch", 4, 8});
  m.Initializer("W", onnx::TensorProto::FLOAT, {8, 32});
  if (split) {
    FloatConstant(m, "top", {2, 32}, std::vector<float>(table.begin(), table.begin() + 64));
    FloatConstant(m, "bottom", {2, 32}, std::vector<float>(table.begin() + 64, table.end()));
    testing::SetInt(m.Node("Concat", {"top", "bottom"}, {"table"}), "axis", 0);
  } else {
    FloatConstant(m, "table", {4, 32}, table);
  }
  m.Node("MatMul", {"x", "W"}, {"h"});
  m.Node("Add", {"h", "table"}, {"y"});
  m.Output("y", onnx::TensorProto::FLOAT, {{"batch", 4, 32}});
  return m.Import(split ? "table_split.onnx" : "table_whole.onnx");
}

std::vector<float> WeightGradient(const Graph& graph) {
  return testing::OnlyParameterGradient(graph, /*rows=*/2, /*seed=*/5);
}

TEST_CASE("executor: a 128-element float Constant table is computed with",
          "[executor][constants]") {
  const std::vector<float> whole = WeightGradient(TableModel(/*split=*/false));
  const std::vector<float> split = WeightGradient(TableModel(/*split=*/true));
  REQUIRE(whole.size() == 8 * 32);
  // The MSE gradient of W reads y - target, so the table's values are in it: equal to the bit.
  CHECK(whole == split);
}

}  // namespace
}  // namespace memplan
