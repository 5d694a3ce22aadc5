#include "graph/constant_weights.h"

#include <algorithm>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "graph/dtype.h"
#include "graph/ops/op_registry.h"

namespace memplan {
namespace {

bool IsDefaultDomain(const std::string& domain) { return domain.empty() || domain == "ai.onnx"; }

const OpSchema& SchemaOf(const onnx::NodeProto& node) {
  return OpRegistry::Get().FindOrUnknown(node.op_type(), node.domain());
}

const onnx::TensorProto* ConstantTensor(const onnx::NodeProto& node) {
  if (!IsDefaultDomain(node.domain()) || node.op_type() != "Constant" || node.output_size() != 1)
    return nullptr;
  for (const auto& a : node.attribute())
    if (a.name() == "value" && a.type() == onnx::AttributeProto::TENSOR) return &a.t();
  return nullptr;
}

// A bias is one value per channel: at most one dim above 1 ([C], [1, C, 1, 1]). A constant of
// more dims added to a MatMul output is something else (a [1, 1, S, S] attention mask).
bool IsVectorShaped(const onnx::TensorProto& tensor) {
  int wide_dims = 0;
  for (int64_t d : tensor.dims()) wide_dims += d > 1;
  return wide_dims <= 1;
}

bool IsFloatingWeight(const onnx::TensorProto& tensor) {
  auto dtype = DTypeFromOnnx(tensor.data_type());
  return dtype && IsFloating(*dtype) && tensor.dims_size() > 0;
}

}  // namespace

int64_t PromoteConstantWeights(onnx::ModelProto& model) {
  onnx::GraphProto& g = *model.mutable_graph();
  std::unordered_map<std::string, const onnx::NodeProto*> producer;
  for (const auto& n : g.node())
    for (const auto& out : n.output()) producer[out] = &n;

  // For each floating Constant output: whether every use is a weight slot.
  std::unordered_map<std::string, bool> all_weight_uses;
  std::unordered_map<std::string, const onnx::TensorProto*> tensors;
  for (const auto& n : g.node()) {
    const onnx::TensorProto* t = ConstantTensor(n);
    if (!t || !IsFloatingWeight(*t)) continue;
    all_weight_uses[n.output(0)] = true;
    tensors[n.output(0)] = t;
  }
  if (all_weight_uses.empty()) return 0;
  for (const auto& out : g.output())
    if (auto it = all_weight_uses.find(out.name()); it != all_weight_uses.end()) it->second = false;
  for (const auto& n : g.node()) {
    for (int i = 0; i < n.input_size(); ++i) {
      auto it = all_weight_uses.find(n.input(i));
      if (it == all_weight_uses.end()) continue;
      // A weight slot of its op, or a vector added to a linear layer's output (its bias).
      const OpSchema& schema = SchemaOf(n);
      bool weight_slot = std::find(schema.weight_inputs.begin(), schema.weight_inputs.end(), i) !=
                         schema.weight_inputs.end();
      if (schema.adds_inputs && n.input_size() == 2 && IsVectorShaped(*tensors.at(n.input(i)))) {
        auto other = producer.find(n.input(1 - i));
        weight_slot |= other != producer.end() && SchemaOf(*other->second).is_linear_layer;
      }
      if (!weight_slot) it->second = false;
    }
  }

  int64_t promoted = 0;
  google::protobuf::RepeatedPtrField<onnx::NodeProto> kept;
  for (auto& n : *g.mutable_node()) {
    auto it = n.output_size() == 1 ? all_weight_uses.find(n.output(0)) : all_weight_uses.end();
    if (it == all_weight_uses.end() || !it->second) {
      kept.Add()->Swap(&n);
      continue;
    }
    for (auto& a : *n.mutable_attribute()) {
      if (a.name() != "value") continue;
      onnx::TensorProto* initializer = g.add_initializer();
      initializer->Swap(a.mutable_t());
      initializer->set_name(n.output(0));
    }
    ++promoted;
  }
  g.mutable_node()->Swap(&kept);
  return promoted;
}

}  // namespace memplan
