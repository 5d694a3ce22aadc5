// The NodeProto helpers the matchers of graph/fusion/patterns.h build their fused nodes with.
#include "graph/fusion/patterns.h"

namespace memplan {

onnx::NodeProto FusedNode(const std::string& op_type, const std::string& domain,
                          std::initializer_list<std::string> inputs, const std::string& output) {
  onnx::NodeProto n;
  n.set_op_type(op_type);
  n.set_domain(domain);
  for (const auto& in : inputs) n.add_input(in);
  n.add_output(output);
  return n;
}

void SetFloatAttribute(onnx::NodeProto& node, const std::string& name, float value) {
  auto* a = node.add_attribute();
  a->set_name(name);
  a->set_type(onnx::AttributeProto::FLOAT);
  a->set_f(value);
}

void SetIntAttribute(onnx::NodeProto& node, const std::string& name, int64_t value) {
  auto* a = node.add_attribute();
  a->set_name(name);
  a->set_type(onnx::AttributeProto::INT);
  a->set_i(value);
}

void SetIntsAttribute(onnx::NodeProto& node, const std::string& name,
                      const std::vector<int64_t>& values) {
  auto* a = node.add_attribute();
  a->set_name(name);
  a->set_type(onnx::AttributeProto::INTS);
  for (int64_t v : values) a->add_ints(v);
}

void SetStringAttribute(onnx::NodeProto& node, const std::string& name, const std::string& value) {
  auto* a = node.add_attribute();
  a->set_name(name);
  a->set_type(onnx::AttributeProto::STRING);
  a->set_s(value);
}

}  // namespace memplan
