#include "graph/fusion/proto_index.h"

#include <algorithm>
#include <cmath>

#include "graph/onnx_convert.h"

namespace memplan {
namespace {

// Axes and shapes are short; anything longer is not what a pattern looks for.
constexpr int64_t kMaxIntegerElements = 8;
// GroupNorm's per-group constants: one value per group (32 in most models, never above C).
constexpr int64_t kMaxRealElements = 4096;

}  // namespace

ProtoIndex::ProtoIndex(const onnx::GraphProto& graph) : graph_(graph) {
  for (const auto& t : graph.initializer()) {
    constants_[t.name()] = &t;
    initializers_[t.name()] = &t;
  }
  for (const auto& in : graph.input()) graph_inputs_.insert(in.name());
  for (int i = 0; i < graph.node_size(); ++i) {
    const auto& n = graph.node(i);
    for (const auto& out : n.output())
      if (!out.empty()) producer_[out] = i;
    for (const auto& in : n.input())
      if (!in.empty()) consumers_[in].push_back(i);
    if (n.op_type() != "Constant" || !n.domain().empty() || n.output_size() != 1) continue;
    for (const auto& a : n.attribute()) {
      if (a.name() == "value" && a.type() == onnx::AttributeProto::TENSOR)
        constants_[n.output(0)] = &a.t();
      if (a.name() == "value_float" && a.type() == onnx::AttributeProto::FLOAT)
        attribute_scalars_[n.output(0)] = a.f();
      if (a.name() == "value_int" && a.type() == onnx::AttributeProto::INT)
        attribute_scalars_[n.output(0)] = static_cast<double>(a.i());
    }
  }
  for (const auto& o : graph.output()) graph_outputs_.insert(o.name());
}

std::optional<double> ProtoIndex::Scalar(const std::string& name) const {
  if (auto it = attribute_scalars_.find(name); it != attribute_scalars_.end()) return it->second;
  auto it = constants_.find(name);
  if (it == constants_.end()) return std::nullopt;
  // A graph input of the same name overrides an initializer's value (IR < 4 defaults).
  if (graph_inputs_.count(name) && initializers_.count(name)) return std::nullopt;
  if (auto floats = SmallFloatValues(*it->second, /*max_elements=*/1);
      floats && floats->size() == 1)
    return floats->front();
  if (auto ints = SmallIntegerValues(*it->second, /*max_elements=*/1); ints && ints->size() == 1)
    return static_cast<double>(ints->front());
  return std::nullopt;
}

std::optional<int> ProtoIndex::ConstantRank(const std::string& name) const {
  if (attribute_scalars_.count(name)) return 0;
  auto it = constants_.find(name);
  if (it == constants_.end() || (graph_inputs_.count(name) && initializers_.count(name)))
    return std::nullopt;
  return it->second->dims_size();
}

std::optional<std::vector<int64_t>> ProtoIndex::Integers(const std::string& name) const {
  auto it = constants_.find(name);
  if (it == constants_.end()) {
    // The dynamo exporter writes some integer lists as Reshape(c, c) of a constant c (a
    // ReduceMean's axes [-1] in HF's RMSNorm, torch 2.15): a Reshape keeps the flat values. One
    // level only, the data itself a constant.
    const std::optional<int> reshape = Producer(name);
    if (!reshape || !IsOp(node(*reshape), "Reshape", 2)) return std::nullopt;
    const std::string& data = node(*reshape).input(0);
    return constants_.count(data) ? Integers(data) : std::nullopt;
  }
  if (graph_inputs_.count(name) && initializers_.count(name)) return std::nullopt;
  return SmallIntegerValues(*it->second, kMaxIntegerElements);
}

std::optional<std::vector<double>> ProtoIndex::Reals(const std::string& name) const {
  auto it = constants_.find(name);
  if (it == constants_.end() || (graph_inputs_.count(name) && initializers_.count(name)))
    return std::nullopt;
  return SmallFloatValues(*it->second, kMaxRealElements);
}

const onnx::TensorProto* ProtoIndex::Initializer(const std::string& name) const {
  auto it = initializers_.find(name);
  return it == initializers_.end() ? nullptr : it->second;
}

std::optional<int> ProtoIndex::Producer(const std::string& name) const {
  auto it = producer_.find(name);
  return it == producer_.end() ? std::nullopt : std::optional<int>(it->second);
}

const std::vector<int>& ProtoIndex::Consumers(const std::string& name) const {
  static const std::vector<int> kNone;
  auto it = consumers_.find(name);
  return it == consumers_.end() ? kNone : it->second;
}

std::optional<int> ProtoIndex::SoleConsumer(const std::string& name) const {
  const auto& readers = Consumers(name);
  if (readers.size() != 1 || IsGraphOutput(name)) return std::nullopt;
  // A node reading the value twice (Mul(t, t)) is one consumer listed twice: not sole here, and
  // no pattern expects it.
  return readers[0];
}

bool IsOp(const onnx::NodeProto& n, const char* op_type, int inputs) {
  return n.op_type() == op_type && (n.domain().empty() || n.domain() == "ai.onnx") &&
         n.input_size() == inputs && n.output_size() == 1;
}

bool Near(std::optional<double> v, double expected) {
  return v && std::fabs(*v - expected) <= 1e-5 * std::fabs(expected);
}

bool NearHalf(std::optional<double> v, double expected) {
  return v && std::fabs(*v - expected) <= 1e-3 * std::fabs(expected);
}

std::optional<std::string> OtherThanScalar(const onnx::NodeProto& n, const ProtoIndex& index,
                                           double value, bool commutative) {
  if (n.input_size() != 2) return std::nullopt;
  if (Near(index.Scalar(n.input(1)), value)) return n.input(0);
  if (commutative && Near(index.Scalar(n.input(0)), value)) return n.input(1);
  return std::nullopt;
}

std::optional<std::string> OtherOperand(const onnx::NodeProto& n, const std::string& known) {
  if (n.input_size() != 2) return std::nullopt;
  if (n.input(0) == known) return n.input(1);
  if (n.input(1) == known) return n.input(0);
  return std::nullopt;
}

std::optional<int> SoleConsumerOp(const ProtoIndex& index, const std::string& value,
                                  const char* op_type, int inputs) {
  auto consumer = index.SoleConsumer(value);
  if (!consumer || !IsOp(index.node(*consumer), op_type, inputs)) return std::nullopt;
  return consumer;
}

bool IsSmallRankWeight(const ProtoIndex& index, const std::string& name, int max_rank) {
  const onnx::TensorProto* t = index.Initializer(name);
  return t != nullptr && !index.IsGraphInput(name) && t->dims_size() <= max_rank;
}

std::optional<int> TrailingReduceMeanAxes(const ProtoIndex& index, const onnx::NodeProto& n) {
  if (n.op_type() != "ReduceMean" || !(n.domain().empty() || n.domain() == "ai.onnx") ||
      n.output_size() != 1 || n.input_size() < 1 || n.input_size() > 2)
    return std::nullopt;
  std::optional<std::vector<int64_t>> axes;
  for (const auto& a : n.attribute()) {
    if (a.name() == "keepdims" && a.i() != 1) return std::nullopt;
    if (a.name() == "axes") axes = std::vector<int64_t>(a.ints().begin(), a.ints().end());
  }
  if (n.input_size() == 2) {
    if (axes) return std::nullopt;  // both forms at once: not a node any exporter writes
    axes = index.Integers(n.input(1));
  }
  if (!axes || axes->empty()) return std::nullopt;
  std::vector<int64_t> sorted = *axes;
  std::sort(sorted.begin(), sorted.end());
  const int k = static_cast<int>(sorted.size());
  for (int i = 0; i < k; ++i)
    if (sorted[static_cast<size_t>(i)] != i - k) return std::nullopt;
  return k;
}

std::optional<Reduction> ReductionOf(const ProtoIndex& index, const onnx::NodeProto& n,
                                     const char* op_type) {
  if (n.op_type() != op_type || !(n.domain().empty() || n.domain() == "ai.onnx") ||
      n.output_size() != 1 || n.input_size() < 1 || n.input_size() > 2)
    return std::nullopt;
  Reduction r;
  bool axes_attribute = false;
  for (const auto& a : n.attribute()) {
    if (a.name() == "keepdims") r.keepdims = a.i() != 0;
    if (a.name() == "noop_with_empty_axes" && a.i() != 0) return std::nullopt;
    if (a.name() == "axes") {
      r.axes.assign(a.ints().begin(), a.ints().end());
      axes_attribute = true;
    }
  }
  if (n.input_size() == 2 && !n.input(1).empty()) {
    if (axes_attribute) return std::nullopt;
    auto axes = index.Integers(n.input(1));
    if (!axes) return std::nullopt;
    r.axes = std::move(*axes);
  }
  return r;
}

}  // namespace memplan
