#include "graph/lora_adapters.h"

#include <algorithm>
#include <optional>
#include <set>
#include <utility>
#include <vector>

#include "graph/linear_weight.h"
#include "graph/model_facts.h"
#include "graph/name_pattern.h"

namespace memplan {
namespace {

struct Target {
  ValueId weight;
  LinearWeightUse use;
  ValueId a;  // adapters, set when added
  ValueId b;
};

bool Matches(const Graph& graph, const Value& v, const NamePattern& re) {
  if (re.Matches(v.name)) return true;
  for (NodeId n : v.consumers)
    if (re.Matches(graph.node(n).name)) return true;
  return false;
}

Expected<std::vector<Target>> FindTargets(const Graph& graph, const LoraOptions& options) {
  const std::string pattern = options.targets.empty() ? kDefaultLoraTargets : options.targets;
  MEMPLAN_TRY(NamePattern re, NamePattern::Compile(pattern, "--lora-targets"));
  std::vector<Target> targets;
  for (const Value& v : graph.values()) {
    if (v.kind != ValueKind::kParameter || !IsFloating(v.dtype) || !v.trainable) continue;
    if (v.shape.rank() < 2 || !Matches(graph, v, re)) continue;
    std::optional<LinearWeightUse> use = AsLinearWeight(graph, v.id);
    if (!use)
      return MakeError("--lora-targets: '" + v.name +
                       "' matches but is not a 2-D MatMul/Gemm weight (LoRA adapts linear layers)");
    if (options.rank > std::min(use->input_features, use->output_features))
      return MakeError("--lora: rank " + std::to_string(options.rank) + " exceeds the dims of '" +
                       v.name + "' (" + std::to_string(use->input_features) + " x " +
                       std::to_string(use->output_features) + ")");
    targets.push_back(Target{v.id, std::move(*use), ValueId(), ValueId()});
  }
  if (targets.empty())
    return MakeError("--lora-targets: '" + pattern + "' matches no MatMul/Gemm weight");
  return targets;
}

Value Parameter(std::string name, DType dtype, int64_t rows, int64_t cols) {
  Value v;
  v.name = std::move(name);
  v.dtype = dtype;
  v.shape = Shape{{Dim(rows), Dim(cols)}};
  v.kind = ValueKind::kParameter;
  return v;
}

Value Intermediate(std::string name, DType dtype, Shape shape) {
  Value v;
  v.name = std::move(name);
  v.dtype = dtype;
  v.shape = std::move(shape);
  v.kind = ValueKind::kIntermediate;
  return v;
}

Node MakeNode(std::string name, std::string op_type, std::vector<ValueId> inputs,
              std::vector<ValueId> outputs) {
  Node node;
  node.name = std::move(name);
  node.op_type = std::move(op_type);
  node.inputs = std::move(inputs);
  node.outputs = std::move(outputs);
  return node;
}

}  // namespace

Status InsertLoraAdapters(Graph& graph, const LoraOptions& options) {
  if (options.rank < 1) return MakeError("--lora: the rank must be >= 1");
  MEMPLAN_TRY(std::vector<Target> targets, FindTargets(graph, options));
  // The product nodes (MatMul/Gemm computing x W) each target adapts.
  std::vector<int> target_of(graph.num_nodes(), -1);
  for (size_t t = 0; t < targets.size(); ++t)
    for (NodeId n : targets[t].use.products) target_of[n.index()] = static_cast<int>(t);

  // Rebuild the graph so each adapter's nodes follow their base node in node order: values keep
  // their ids (copied first, in order), nodes are re-added with the adapter nodes interleaved.
  Graph out;
  for (const Value& v : graph.values()) {
    Value copy = v;
    copy.producer = NodeId();
    copy.consumers.clear();
    if (options.freeze_base && copy.kind == ValueKind::kParameter) copy.frozen = true;
    out.AddValue(std::move(copy));
  }
  for (Target& t : targets) {
    const Value& w = graph.value(t.weight);
    out.mutable_value(t.weight).frozen = true;
    t.a = out.AddValue(Parameter(w.name + ".lora_A", w.dtype, t.use.input_features, options.rank));
    t.b = out.AddValue(Parameter(w.name + ".lora_B", w.dtype, options.rank, t.use.output_features));
  }
  for (const Node& node : graph.nodes()) {
    const int t = target_of[node.id.index()];
    if (t < 0) {
      out.AddNode(node);
      continue;
    }
    const Target& target = targets[static_cast<size_t>(t)];
    const ValueId x = node.inputs[0];
    const ValueId y = node.outputs[0];
    const Value& yv = graph.value(y);
    const Value& xv = graph.value(x);
    if (!xv.shape.known || xv.shape.rank() < 1 || !yv.shape.known)
      return MakeError("--lora: the input or output of '" + node.name + "' has an unknown shape");
    Shape h_shape = xv.shape;
    h_shape.dims.back() = Dim(options.rank);
    const ValueId base = out.AddValue(Intermediate(yv.name + "/lora_base", yv.dtype, yv.shape));
    const ValueId h = out.AddValue(Intermediate(yv.name + "/lora_A", yv.dtype, h_shape));
    const ValueId d = out.AddValue(Intermediate(yv.name + "/lora_B", yv.dtype, yv.shape));
    Node base_node = node;
    base_node.outputs[0] = base;
    out.AddNode(std::move(base_node));
    out.AddNode(MakeNode(node.name + "/lora_A", "MatMul", {x, target.a}, {h}));
    out.AddNode(MakeNode(node.name + "/lora_B", "MatMul", {h, target.b}, {d}));
    out.AddNode(MakeNode(node.name + "/lora_add", "Add", {base, d}, {y}));
  }
  for (ValueId v : graph.inputs()) {
    const ValueKind kind = out.value(v).kind;  // external weights are declared inputs too
    out.MarkInput(v);
    out.mutable_value(v).kind = kind;
  }
  for (ValueId v : graph.outputs()) out.MarkOutput(v);
  CopyModelFacts(graph, out);
  graph = std::move(out);
  return OkStatus();
}

}  // namespace memplan
