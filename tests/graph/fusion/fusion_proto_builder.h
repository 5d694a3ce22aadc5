#pragma once
// Hand-built node chains for the import-fusion tests (graph/fusion), written with the protobuf API
// the way torch.onnx writes them: scalars as Constant nodes, names scoped like "/mlp/act/Mul_1".

#include <catch2/catch.hpp>

#include <onnx/onnx_pb.h>

#include <initializer_list>
#include <string>
#include <vector>

#include "graph/fusion/fusion_table.h"

namespace memplan::testing {

class FusionProtoBuilder {
 public:
  explicit FusionProtoBuilder(int64_t opset = 13) {
    model_.set_ir_version(8);
    model_.add_opset_import()->set_version(opset);
  }
  // A Constant node holding one float; returns its output.
  std::string Scalar(const std::string& name, float v) { return Filled(name, {}, v); }
  // A Constant node holding a float tensor of `dims` (a scalar where empty) with every element
  // `value`, as torch writes torch.ones or a folded constant; returns its output.
  std::string Filled(const std::string& name, const std::vector<int64_t>& dims, float value) {
    auto& n = Node("Constant", name, {});
    auto* a = n.add_attribute();
    a->set_name("value");
    a->set_type(onnx::AttributeProto::TENSOR);
    a->mutable_t()->set_data_type(onnx::TensorProto::FLOAT);
    int64_t count = 1;
    for (int64_t d : dims) {
      a->mutable_t()->add_dims(d);
      count *= d;
    }
    for (int64_t i = 0; i < count; ++i) a->mutable_t()->add_float_data(value);
    return n.output(0);
  }
  // A float initializer of `dims` (a weight); returns its name.
  std::string Weight(const std::string& name, std::vector<int64_t> dims) {
    auto* t = graph().add_initializer();
    t->set_name(name);
    t->set_data_type(onnx::TensorProto::FLOAT);
    int64_t count = 1;
    for (int64_t d : dims) {
      t->add_dims(d);
      count *= d;
    }
    for (int64_t i = 0; i < count; ++i) t->add_float_data(1.0f);
    return name;
  }
  // An int64 initializer (opset-18 axes).
  std::string Int64s(const std::string& name, std::vector<int64_t> values) {
    auto* t = graph().add_initializer();
    t->set_name(name);
    t->set_data_type(onnx::TensorProto::INT64);
    t->add_dims(static_cast<int64_t>(values.size()));
    for (int64_t v : values) t->add_int64_data(v);
    return name;
  }
  onnx::NodeProto& Node(const std::string& type, const std::string& name,
                        std::initializer_list<std::string> inputs, int outputs = 1) {
    auto* n = graph().add_node();
    n->set_op_type(type);
    n->set_name(name);
    for (const auto& in : inputs) n->add_input(in);
    for (int i = 0; i < outputs; ++i)
      n->add_output(name + (i == 0 ? "_out" : "_out" + std::to_string(i)));
    return *n;
  }
  // One node with one output; returns the output's name.
  std::string Op(const std::string& type, const std::string& name,
                 std::initializer_list<std::string> inputs) {
    return Node(type, name, inputs).output(0);
  }
  void Output(const std::string& name) { graph().add_output()->set_name(name); }
  onnx::GraphProto& graph() { return *model_.mutable_graph(); }
  onnx::ModelProto& model() { return model_; }

 private:
  onnx::ModelProto model_;
};

inline void AddInts(onnx::NodeProto& n, const std::string& name, std::vector<int64_t> v) {
  auto* a = n.add_attribute();
  a->set_name(name);
  a->set_type(onnx::AttributeProto::INTS);
  for (int64_t x : v) a->add_ints(x);
}
inline void AddInt(onnx::NodeProto& n, const std::string& name, int64_t v) {
  auto* a = n.add_attribute();
  a->set_name(name);
  a->set_type(onnx::AttributeProto::INT);
  a->set_i(v);
}
inline void AddFloat(onnx::NodeProto& n, const std::string& name, float v) {
  auto* a = n.add_attribute();
  a->set_name(name);
  a->set_type(onnx::AttributeProto::FLOAT);
  a->set_f(v);
}

// Applies the fusion-table entry named `entry` to the builder's model; returns how many
// occurrences it fused.
inline int Fuse(FusionProtoBuilder& b, const char* entry) {
  return ApplyFusion(b.model(), FusionEntryNamed(entry));
}

// Fuses the one occurrence of `entry` in a graph Relu -> pattern -> Relu and returns the node
// left between the two Relus, checked to be the ai.onnx `op_type` named `name`.
inline const onnx::NodeProto& FuseBetweenRelus(FusionProtoBuilder& b, const char* entry,
                                               const std::string& op_type,
                                               const std::string& name) {
  REQUIRE(Fuse(b, entry) == 1);
  REQUIRE(b.graph().node_size() == 3);
  const onnx::NodeProto& fused = b.graph().node(1);
  CHECK(fused.op_type() == op_type);
  CHECK(fused.domain().empty());
  CHECK(fused.name() == name);
  return fused;
}

// How a value inside a pattern escapes it: another node reads it too, or the graph returns it.
// Either way the value must survive, so a fusion that would swallow it must leave the pattern
// as written.
enum class Escape { kReadElsewhere, kGraphOutput };

// A graph Relu("/pre") -> `chain` (given the builder and the Relu's output, returning the
// pattern's output, which the graph returns) in which `value` escapes as `how` says: another
// Relu "/other" reads it, or it is a second graph output. Not yet fused.
template <typename Chain>
FusionProtoBuilder WithEscapingValue(Chain chain, const std::string& value, Escape how,
                                     int64_t opset = 13) {
  FusionProtoBuilder b(opset);
  b.Output(chain(b, b.Op("Relu", "/pre", {"input"})));
  b.Output(how == Escape::kReadElsewhere ? b.Op("Relu", "/other", {value}) : value);
  return b;
}

// One way a value escapes: the section it is checked in, the value, and how it escapes.
struct EscapeCase {
  const char* section;
  std::string value;
  Escape how;
};

// For each case, a section that builds WithEscapingValue(chain, value, how, opset) and checks
// that `entry` fuses nothing there and leaves the graph exactly as written.
template <typename Chain>
void CheckLeftAloneWhenEscaping(const char* entry, Chain chain,
                                std::initializer_list<EscapeCase> cases, int64_t opset = 13) {
  for (const EscapeCase& c : cases) {
    DYNAMIC_SECTION(c.section) {
      FusionProtoBuilder b = WithEscapingValue(chain, c.value, c.how, opset);
      const std::string written = b.graph().SerializeAsString();
      CHECK(Fuse(b, entry) == 0);
      CHECK(b.graph().SerializeAsString() == written);
    }
  }
}

inline int CountOps(const onnx::GraphProto& g, const std::string& type) {
  int count = 0;
  for (const auto& n : g.node()) count += n.op_type() == type;
  return count;
}

// The only node of `type` (REQUIRE'd by the caller through CountOps).
inline const onnx::NodeProto& OnlyNode(const onnx::GraphProto& g, const std::string& type) {
  for (const auto& n : g.node())
    if (n.op_type() == type) return n;
  return g.node(0);
}

inline float FloatAttribute(const onnx::NodeProto& n, const std::string& name) {
  for (const auto& a : n.attribute())
    if (a.name() == name) return a.f();
  return -1.0f;
}
inline int64_t IntAttribute(const onnx::NodeProto& n, const std::string& name) {
  for (const auto& a : n.attribute())
    if (a.name() == name) return a.i();
  return -999;
}
inline std::string StringAttribute(const onnx::NodeProto& n, const std::string& name) {
  for (const auto& a : n.attribute())
    if (a.name() == name) return a.s();
  return "";
}

}  // namespace memplan::testing
