// The executor computes with Constant tables and integer initializers larger than shape folding
// keeps (rotary cos/sin, additive masks: torch.onnx writes non-persistent buffers as Constant
// nodes; index tables such as Swin's relative_position_index are int64 initializers). Before, a
// float Constant of more than 64 elements kept no values and `verify` of a LLaMA-style export
// stopped with "Constant ... is too large for the importer to keep"; an int64 initializer of
// more than 64 elements stopped Swin's with "constant ... has no value the runtime can compute".
#include <catch2/catch.hpp>

#include <optional>
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

// y = Gather(x W, index, axis 2): x [batch, 4, 8], W [8, 32], index an int64 initializer of 128
// entries in [0, 32) (a pattern with repeats), y [batch, 4, 128]. With `split` the index is two
// 64-entry initializers joined by a Concat (within what folding keeps).
Graph IndexModel(bool split) {
  std::vector<int64_t> index(128);
  for (size_t i = 0; i < index.size(); ++i) index[i] = static_cast<int64_t>((i * 7 + 3) % 32);
  ProtoModel m(/*opset=*/13);
  m.Input("x", onnx::TensorProto::FLOAT, {"batch", 4, 8});
  m.Initializer("W", onnx::TensorProto::FLOAT, {8, 32});
  if (split) {
    m.Int64s("first", std::vector<int64_t>(index.begin(), index.begin() + 64));
    m.Int64s("second", std::vector<int64_t>(index.begin() + 64, index.end()));
    testing::SetInt(m.Node("Concat", {"first", "second"}, {"index"}), "axis", 0);
  } else {
    m.Int64s("index", index);
  }
  m.Node("MatMul", {"x", "W"}, {"h"});
  testing::SetInt(m.Node("Gather", {"h", "index"}, {"y"}), "axis", 2);
  m.Output("y", onnx::TensorProto::FLOAT, {{"batch", 4, 128}});
  return m.Import(split ? "index_split.onnx" : "index_whole.onnx");
}

TEST_CASE("executor: a 128-entry int64 index initializer is computed with",
          "[executor][constants]") {
  const Graph whole_graph = IndexModel(/*split=*/false);
  const std::optional<ValueId> index = whole_graph.FindValue("index");
  REQUIRE(index);
  CHECK(whole_graph.value(*index).integer_data.size() == 128);
  CHECK(whole_graph.value(*index).integer_data[1] == 10);  // (1 * 7 + 3) % 32
  const std::vector<float> whole = WeightGradient(whole_graph);
  const std::vector<float> split = WeightGradient(IndexModel(/*split=*/true));
  REQUIRE(whole.size() == 8 * 32);
  // Each W column's gradient sums the rows of y that gathered it: the indices are in it.
  CHECK(whole == split);
}

}  // namespace
}  // namespace memplan
