#pragma once
// Hand-built ONNX models for import tests, written with the protobuf API: models of opsets newer
// than the Python onnx 1.12 can make or check (18, 21, 23), foreign-exporter quirks (Constant
// weights, tf2onnx's unk__N symbols). Import() writes the model to a temporary file and imports it.

#include <catch2/catch.hpp>

#include <onnx/onnx_pb.h>

#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <optional>
#include <string>
#include <variant>
#include <vector>

#include "graph/onnx_import.h"

namespace memplan::testing {

// A dim: a number or a symbol name.
using ProtoDim = std::variant<int64_t, std::string>;

class ProtoModel {
 public:
  explicit ProtoModel(int64_t opset, int64_t ir_version = 8) {
    model_.set_ir_version(ir_version);
    model_.set_producer_name("memplan-test");
    model_.add_opset_import()->set_version(opset);
    graph().set_name("test");
  }

  ProtoModel& Opset(const std::string& domain, int64_t version) {
    auto* o = model_.add_opset_import();
    o->set_domain(domain);
    o->set_version(version);
    return *this;
  }
  ProtoModel& Input(const std::string& name, int32_t elem_type, std::vector<ProtoDim> dims) {
    SetType(graph().add_input(), name, elem_type, dims);
    return *this;
  }
  // A declared graph output; without dims its shape is left undeclared, which only models that
  // libonnx does not check may do (its checker requires a shape).
  ProtoModel& Output(const std::string& name, int32_t elem_type = onnx::TensorProto::FLOAT,
                     std::optional<std::vector<ProtoDim>> dims = std::nullopt) {
    auto* vi = graph().add_output();
    if (dims) {
      SetType(vi, name, elem_type, *dims);
    } else {
      vi->set_name(name);
      vi->mutable_type()->mutable_tensor_type()->set_elem_type(elem_type);
    }
    return *this;
  }
  // A value_info declaration, as tf2onnx writes for intermediates.
  ProtoModel& ValueInfo(const std::string& name, int32_t elem_type, std::vector<ProtoDim> dims) {
    SetType(graph().add_value_info(), name, elem_type, dims);
    return *this;
  }
  // An initializer with `dims` and no data (raw_data of the right length for small ones).
  ProtoModel& Initializer(const std::string& name, int32_t elem_type, std::vector<int64_t> dims) {
    FillTensor(graph().add_initializer(), name, elem_type, dims);
    return *this;
  }
  ProtoModel& Int64s(const std::string& name, std::vector<int64_t> values) {
    auto* t = graph().add_initializer();
    t->set_name(name);
    t->set_data_type(onnx::TensorProto::INT64);
    t->add_dims(static_cast<int64_t>(values.size()));
    for (int64_t v : values) t->add_int64_data(v);
    return *this;
  }
  ProtoModel& FloatScalar(const std::string& name, float value) {
    auto* t = graph().add_initializer();
    t->set_name(name);
    t->set_data_type(onnx::TensorProto::FLOAT);
    t->add_float_data(value);
    return *this;
  }
  ProtoModel& BoolScalar(const std::string& name, bool value) {
    auto* t = graph().add_initializer();
    t->set_name(name);
    t->set_data_type(onnx::TensorProto::BOOL);
    t->add_int32_data(value ? 1 : 0);
    return *this;
  }
  // A Constant node holding a float tensor of `dims` (zeros), paddle2onnx style.
  ProtoModel& ConstantFloats(const std::string& output, std::vector<int64_t> dims) {
    auto* n = graph().add_node();
    n->set_op_type("Constant");
    n->set_name(output + "_const");
    n->add_output(output);
    auto* a = n->add_attribute();
    a->set_name("value");
    a->set_type(onnx::AttributeProto::TENSOR);
    FillTensor(a->mutable_t(), "", onnx::TensorProto::FLOAT, dims);
    return *this;
  }
  onnx::NodeProto& Node(const std::string& op_type, std::vector<std::string> inputs,
                        std::vector<std::string> outputs, const std::string& domain = "") {
    auto* n = graph().add_node();
    n->set_op_type(op_type);
    n->set_name(outputs.empty() ? op_type : outputs[0] + "_node");
    n->set_domain(domain);
    for (const auto& i : inputs) n->add_input(i);
    for (const auto& o : outputs) n->add_output(o);
    return *n;
  }

  onnx::GraphProto& graph() { return *model_.mutable_graph(); }
  onnx::ModelProto& model() { return model_; }

  std::string Write(const std::string& file) const {
    // One folder per process: ctest runs test cases in parallel processes, and two cases that
    // write the same file name (one model builder, other arguments) would read each other's.
    auto dir = std::filesystem::temp_directory_path() /
               ("memplan_proto_model_test_" + std::to_string(::getpid()));
    std::filesystem::create_directories(dir);
    auto path = (dir / file).string();
    std::ofstream out(path, std::ios::binary);
    REQUIRE(model_.SerializeToOstream(&out));
    return path;
  }
  Expected<Graph> TryImport(const std::string& file, const ImportOptions& options = {}) const {
    return ImportOnnxModel(Write(file), options);
  }
  Graph Import(const std::string& file, const ImportOptions& options = {}) const {
    auto graph = TryImport(file, options);
    if (!graph.ok()) FAIL(graph.error().message);
    return std::move(graph).value();
  }
  // The error of a model that must not import: one line, as the CLI prints it.
  std::string ImportError(const std::string& file, const ImportOptions& options = {}) const {
    auto graph = TryImport(file, options);
    INFO(file);
    REQUIRE_FALSE(graph.ok());
    CHECK(graph.error().message.find('\n') == std::string::npos);
    return graph.error().message;
  }

 private:
  static void SetType(onnx::ValueInfoProto* vi, const std::string& name, int32_t elem_type,
                      const std::vector<ProtoDim>& dims) {
    vi->set_name(name);
    auto* tt = vi->mutable_type()->mutable_tensor_type();
    tt->set_elem_type(elem_type);
    auto* shape = tt->mutable_shape();
    for (const auto& d : dims) {
      if (const auto* v = std::get_if<int64_t>(&d)) {
        shape->add_dim()->set_dim_value(*v);
      } else {
        shape->add_dim()->set_dim_param(std::get<std::string>(d));
      }
    }
  }
  static void FillTensor(onnx::TensorProto* t, const std::string& name, int32_t elem_type,
                         const std::vector<int64_t>& dims) {
    t->set_name(name);
    t->set_data_type(elem_type);
    int64_t count = 1;
    for (int64_t d : dims) {
      t->add_dims(d);
      count *= d;
    }
    // Zero bytes at 4 bytes per element: right for float32, enough for the checker elsewhere.
    if (elem_type == onnx::TensorProto::FLOAT)
      t->set_raw_data(std::string(static_cast<size_t>(count) * 4, '\0'));
  }

  onnx::ModelProto model_;
};

inline void SetInt(onnx::NodeProto& n, const std::string& name, int64_t v) {
  auto* a = n.add_attribute();
  a->set_name(name);
  a->set_type(onnx::AttributeProto::INT);
  a->set_i(v);
}

inline void SetInts(onnx::NodeProto& n, const std::string& name, std::vector<int64_t> v) {
  auto* a = n.add_attribute();
  a->set_name(name);
  a->set_type(onnx::AttributeProto::INTS);
  for (int64_t x : v) a->add_ints(x);
}

inline void SetString(onnx::NodeProto& n, const std::string& name, const std::string& v) {
  auto* a = n.add_attribute();
  a->set_name(name);
  a->set_type(onnx::AttributeProto::STRING);
  a->set_s(v);
}

}  // namespace memplan::testing
