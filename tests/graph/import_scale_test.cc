// Import stays linear: a generated GPT-2 XL-sized graph (~2,400 nodes, ~50 MB of external weights
// that are never read) imports quickly and folds every shape sub-graph.

#include <catch2/catch.hpp>

#include <onnx/onnx_pb.h>

#include <chrono>
#include <filesystem>
#include <fstream>

#include "graph/onnx_import.h"

namespace memplan {
namespace {

constexpr int kBlocks = 200;  // 12 nodes each

onnx::NodeProto* AddNode(onnx::GraphProto& g, const std::string& op,
                         std::vector<std::string> inputs, std::string output) {
  onnx::NodeProto* n = g.add_node();
  n->set_op_type(op);
  for (auto& i : inputs) n->add_input(i);
  n->add_output(std::move(output));
  return n;
}

void SetAxis0(onnx::NodeProto* node) {
  onnx::AttributeProto* a = node->add_attribute();
  a->set_name("axis");
  a->set_type(onnx::AttributeProto::INT);
  a->set_i(0);
}

void AddInt64s(onnx::GraphProto& g, const std::string& name, std::vector<int64_t> values,
               bool scalar = false) {
  onnx::TensorProto* t = g.add_initializer();
  t->set_name(name);
  t->set_data_type(onnx::TensorProto::INT64);
  if (!scalar) t->add_dims(static_cast<int64_t>(values.size()));
  for (int64_t v : values) t->add_int64_data(v);
}

void AddExternalWeight(onnx::GraphProto& g, const std::string& name, std::vector<int64_t> dims) {
  onnx::TensorProto* t = g.add_initializer();
  t->set_name(name);
  t->set_data_type(onnx::TensorProto::FLOAT);
  for (int64_t d : dims) t->add_dims(d);
  t->set_data_location(onnx::TensorProto::EXTERNAL);
  auto* location = t->add_external_data();
  location->set_key("location");
  location->set_value("absent_weights.bin");
}

// x[batch, seq, 256] -> (view(B, T, 4, 64) -> transpose -> view(B, T, 256) -> MatMul -> Add ->
// Relu) x kBlocks.
std::string WriteLargeModel() {
  onnx::ModelProto model;
  model.set_ir_version(8);
  model.add_opset_import()->set_version(13);
  onnx::GraphProto& g = *model.mutable_graph();
  g.set_name("large");
  auto* input = g.add_input();
  input->set_name("x0");
  auto* tt = input->mutable_type()->mutable_tensor_type();
  tt->set_elem_type(onnx::TensorProto::FLOAT);
  tt->mutable_shape()->add_dim()->set_dim_param("batch");
  tt->mutable_shape()->add_dim()->set_dim_param("seq");
  tt->mutable_shape()->add_dim()->set_dim_value(256);
  AddInt64s(g, "idx0", {0}, /*scalar=*/true);
  AddInt64s(g, "idx1", {1}, /*scalar=*/true);
  AddInt64s(g, "axes0", {0});
  AddInt64s(g, "heads", {4, 64});
  AddInt64s(g, "hidden", {256});
  for (int i = 0; i < kBlocks; ++i) {
    const std::string p = "b" + std::to_string(i) + "_";
    const std::string x = "x" + std::to_string(i);
    AddExternalWeight(g, p + "W", {256, 256});
    AddExternalWeight(g, p + "bias", {256});
    AddNode(g, "Shape", {x}, p + "shape");
    AddNode(g, "Gather", {p + "shape", "idx0"}, p + "B");
    AddNode(g, "Gather", {p + "shape", "idx1"}, p + "T");
    AddNode(g, "Unsqueeze", {p + "B", "axes0"}, p + "B1");
    AddNode(g, "Unsqueeze", {p + "T", "axes0"}, p + "T1");
    SetAxis0(AddNode(g, "Concat", {p + "B1", p + "T1", "heads"}, p + "target"));
    AddNode(g, "Reshape", {x, p + "target"}, p + "heads");
    SetAxis0(AddNode(g, "Concat", {p + "B1", p + "T1", "hidden"}, p + "target2"));
    AddNode(g, "Reshape", {p + "heads", p + "target2"}, p + "merged");
    AddNode(g, "MatMul", {p + "merged", p + "W"}, p + "mm");
    AddNode(g, "Add", {p + "mm", p + "bias"}, p + "biased");
    AddNode(g, "Relu", {p + "biased"}, "x" + std::to_string(i + 1));
  }
  auto* output = g.add_output();
  output->set_name("x" + std::to_string(kBlocks));
  output->mutable_type()->mutable_tensor_type()->set_elem_type(onnx::TensorProto::FLOAT);
  output->mutable_type()->mutable_tensor_type()->mutable_shape();

  auto dir = std::filesystem::temp_directory_path() / "memplan_import_scale_test";
  std::filesystem::create_directories(dir);
  std::string path = (dir / "large.onnx").string();
  std::ofstream out(path, std::ios::binary);
  REQUIRE(model.SerializeToOstream(&out));
  return path;
}

TEST_CASE("a 2400-node model imports in linear time", "[import]") {
  const std::string path = WriteLargeModel();
  auto start = std::chrono::steady_clock::now();
  auto graph = ImportOnnxModel(path);
  double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  if (!graph.ok()) FAIL(graph.error().message);
  CHECK(graph->num_nodes() == 12 * kBlocks);
  // The last activation is still [batch, seq, 256]; no fresh symbols were introduced.
  const Value& last = graph->value(*graph->FindValue("x" + std::to_string(kBlocks)));
  CHECK(last.shape.ToString(graph->symbols()) == "[batch, seq, 256]");
  CHECK(graph->symbols().size() == 2);
  // 200 * (256*256 + 256) = 13,158,400 parameters from metadata alone.
  int64_t params = 0;
  for (const Value& v : graph->values())
    if (v.kind == ValueKind::kParameter) params += *v.shape.NumElements().constant_value();
  CHECK(params == 13158400);
  // Generous bound (sanitizer builds, a loaded CI machine); a quadratic pass would take far longer.
  CHECK(seconds < 20.0);
  std::filesystem::remove_all(std::filesystem::path(path).parent_path());
}

}  // namespace
}  // namespace memplan
