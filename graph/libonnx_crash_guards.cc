#include "graph/libonnx_crash_guards.h"

#include <optional>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "graph/onnx_convert.h"

namespace memplan {

void DeclareUntypedShapeInputs(onnx::GraphProto& graph) {
  // Subgraphs first: each is inferred with its own value_info.
  for (auto& node : *graph.mutable_node()) {
    for (auto& attribute : *node.mutable_attribute()) {
      if (attribute.has_g()) DeclareUntypedShapeInputs(*attribute.mutable_g());
      for (auto& subgraph : *attribute.mutable_graphs()) DeclareUntypedShapeInputs(subgraph);
    }
  }
  // Only values this graph's nodes produce: a graph input or initializer always has a type, and
  // declaring an outer-scope value inside a subgraph would hide the type the outer graph gives it.
  std::unordered_set<std::string> produced;
  for (const auto& node : graph.node()) {
    for (const auto& output : node.output()) produced.insert(output);
  }
  std::unordered_set<std::string> declared;
  for (const auto& info : graph.value_info()) declared.insert(info.name());
  for (const auto& info : graph.output()) declared.insert(info.name());
  std::unordered_set<std::string> shape_inputs;
  for (const auto& node : graph.node()) {
    const bool standard = node.domain().empty() || node.domain() == "ai.onnx";
    if (standard && node.op_type() == "Shape" && node.input_size() > 0) {
      shape_inputs.insert(node.input(0));
    }
  }
  // A graph output may be declared with no type at all: it gets the empty tensor type in place.
  for (auto& info : *graph.mutable_output()) {
    if (shape_inputs.contains(info.name()) && !info.has_type())
      info.mutable_type()->mutable_tensor_type();
  }
  for (const auto& input : shape_inputs) {
    if (!produced.contains(input) || !declared.insert(input).second) continue;
    onnx::ValueInfoProto* info = graph.add_value_info();
    info->set_name(input);
    info->mutable_type()->mutable_tensor_type();
  }
}

}  // namespace memplan

namespace memplan {
namespace {

// Each Slice step libonnx propagates passes through an `int`: beyond this it wraps.
constexpr int64_t kLargestSliceStep = 2147483647;  // 2^31 - 1

std::string Label(const onnx::NodeProto& node) {
  return "node '" + node.name() + "' (" + node.op_type() + ")";
}

bool IsWindowOp(const onnx::NodeProto& node) {
  static const std::unordered_set<std::string> kWindowOps = {
      "Conv",          "ConvInteger", "QLinearConv",
      "ConvTranspose", "MaxPool",     "AveragePool",
      "LpPool",        "MaxUnpool",   "QLinearAveragePool",
      "NhwcConv",      "FusedConv",   "NhwcMaxPool",
      "DeformConv",    "Col2Im"};
  if (kWindowOps.contains(node.op_type())) return true;
  for (const auto& a : node.attribute())
    if (a.name() == "strides" || a.name() == "dilations" || a.name() == "kernel_shape") return true;
  return false;
}

Status CheckWindowAttributes(const onnx::NodeProto& node) {
  for (const auto& a : node.attribute()) {
    const bool positive =
        a.name() == "strides" || a.name() == "dilations" || a.name() == "kernel_shape";
    if (!positive && a.name() != "pads") continue;
    for (int i = 0; i < a.ints_size(); ++i) {
      const int64_t v = a.ints(i);
      if (positive ? v > 0 : v >= 0) continue;
      return MakeError(Label(node) + ": " + a.name() + "[" + std::to_string(i) + "] is " +
                       std::to_string(v) + "; " + a.name() + " must be " +
                       (positive ? "positive" : "non-negative"));
    }
  }
  return OkStatus();
}

// The int64 values a graph states for a name: an initializer's, or a Constant node's `value`.
class ConstantIntegers {
 public:
  explicit ConstantIntegers(const onnx::GraphProto& graph) {
    for (const auto& t : graph.initializer()) tensors_.emplace(t.name(), &t);
    for (const auto& n : graph.node()) {
      if (n.op_type() != "Constant" || n.output_size() != 1) continue;
      for (const auto& a : n.attribute()) {
        if (a.name() == "value" && a.has_t()) tensors_.emplace(n.output(0), &a.t());
        if (a.name() == "value_ints") ints_.emplace(n.output(0), &a);
      }
    }
  }
  std::optional<std::vector<int64_t>> Get(const std::string& name) const {
    if (auto it = tensors_.find(name); it != tensors_.end())
      return SmallIntegerValues(*it->second, /*max_elements=*/4096);
    if (auto it = ints_.find(name); it != ints_.end())
      return std::vector<int64_t>(it->second->ints().begin(), it->second->ints().end());
    return std::nullopt;
  }

 private:
  std::unordered_map<std::string, const onnx::TensorProto*> tensors_;
  std::unordered_map<std::string, const onnx::AttributeProto*> ints_;
};

Status CheckSliceSteps(const onnx::NodeProto& node, const ConstantIntegers& constants) {
  if (node.input_size() < 5 || node.input(4).empty()) return OkStatus();
  auto steps = constants.Get(node.input(4));
  if (!steps) return OkStatus();
  for (size_t i = 0; i < steps->size(); ++i) {
    const int64_t step = (*steps)[i];
    if (step != 0 && step >= -kLargestSliceStep && step <= kLargestSliceStep) continue;
    return MakeError(Label(node) + ": step " + std::to_string(step) + " (steps[" +
                     std::to_string(i) + "]) " +
                     (step == 0 ? "is 0; a Slice step must not be 0"
                                : "is beyond +-(2^31-1); no dimension is that long"));
  }
  return OkStatus();
}

Status CheckBlockSize(const onnx::NodeProto& node) {
  for (const auto& a : node.attribute()) {
    if (a.name() != "blocksize" || a.i() > 0) continue;
    return MakeError(Label(node) + ": blocksize is " + std::to_string(a.i()) +
                     "; it must be positive");
  }
  return OkStatus();
}

}  // namespace

Status RefuseWhatLibOnnxCannotInfer(const onnx::GraphProto& graph) {
  const ConstantIntegers constants(graph);
  for (const auto& node : graph.node()) {
    for (const auto& attribute : node.attribute()) {
      if (attribute.has_g()) MEMPLAN_RETURN_IF_ERROR(RefuseWhatLibOnnxCannotInfer(attribute.g()));
      for (const auto& subgraph : attribute.graphs())
        MEMPLAN_RETURN_IF_ERROR(RefuseWhatLibOnnxCannotInfer(subgraph));
    }
    if (IsWindowOp(node)) MEMPLAN_RETURN_IF_ERROR(CheckWindowAttributes(node));
    if (node.op_type() == "Slice") MEMPLAN_RETURN_IF_ERROR(CheckSliceSteps(node, constants));
    if (node.op_type() == "DepthToSpace" || node.op_type() == "SpaceToDepth")
      MEMPLAN_RETURN_IF_ERROR(CheckBlockSize(node));
  }
  return OkStatus();
}

}  // namespace memplan
