#include "graph/weight_norm_order.h"

#include <string>
#include <unordered_map>
#include <unordered_set>

namespace memplan {
namespace {

bool KeepsDims(const onnx::NodeProto& node) {
  for (const auto& a : node.attribute())
    if (a.name() == "keepdims") return a.i() != 0;
  return true;  // ONNX's default
}

}  // namespace

int64_t ReorderWeightNorms(onnx::GraphProto& graph) {
  std::unordered_set<std::string> initializers;
  for (const auto& t : graph.initializer()) initializers.insert(t.name());
  std::unordered_map<std::string, int> producer;
  std::unordered_map<std::string, int> readers;
  for (int i = 0; i < graph.node_size(); ++i) {
    for (const auto& out : graph.node(i).output()) producer[out] = i;
    for (const auto& in : graph.node(i).input()) ++readers[in];
  }
  for (const auto& out : graph.output()) ++readers[out.name()];
  auto produced_by = [&](const std::string& value, const char* op) -> onnx::NodeProto* {
    auto it = producer.find(value);
    if (it == producer.end()) return nullptr;
    onnx::NodeProto* node = graph.mutable_node(it->second);
    return node->op_type() == op ? node : nullptr;
  };

  std::unordered_set<std::string> renamed;
  int64_t reordered = 0;
  for (int i = 0; i < graph.node_size(); ++i) {
    onnx::NodeProto& mul = *graph.mutable_node(i);
    if (mul.op_type() != "Mul" || mul.input_size() != 2) continue;
    for (int slot = 0; slot < 2; ++slot) {
      const std::string d = mul.input(slot);
      const std::string g = mul.input(1 - slot);
      onnx::NodeProto* div = produced_by(d, "Div");
      if (!div || div->input_size() != 2 || readers[d] != 1 || !initializers.count(g)) continue;
      const std::string v = div->input(0);
      const std::string n = div->input(1);
      const onnx::NodeProto* norm = produced_by(n, "ReduceL2");
      if (!norm || norm->input(0) != v || !KeepsDims(*norm) || !initializers.count(v)) continue;
      const std::string q = d + "_weight_norm_scale";
      div->set_input(0, g);
      div->set_input(1, n);
      div->set_output(0, q);
      mul.set_input(0, v);
      mul.set_input(1, q);
      renamed.insert(d);
      ++reordered;
      break;
    }
  }
  // The old quotient's recorded type (v's shape) no longer describes anything.
  if (!renamed.empty()) {
    google::protobuf::RepeatedPtrField<onnx::ValueInfoProto> kept;
    for (auto& info : *graph.mutable_value_info())
      if (!renamed.count(info.name())) kept.Add()->Swap(&info);
    graph.mutable_value_info()->Swap(&kept);
  }
  return reordered;
}

}  // namespace memplan
