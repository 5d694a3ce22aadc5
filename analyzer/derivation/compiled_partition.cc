#include "analyzer/derivation/compiled_partition.h"

#include <algorithm>
#include <cmath>
#include <deque>
#include <limits>

#include "analyzer/program/runtime_values.h"
#include "graph/ops/op_registry.h"

namespace memplan {
namespace {

// An edge nothing may cut (partitioners.py: capacity=math.inf); finite so that sums stay exact
// enough, and a flow this large means no finite cut exists.
constexpr double kUncuttable = 1e30;
// partitioners.py get_node_weight: mem_sz * 1.1 ** max(min(dist_from_bw, 100), 1).
constexpr double kDistanceBias = 1.1;
constexpr int kMaxDistance = 100;
// Relative slack when reading residual capacities of a double-valued flow.
constexpr double kResidualEpsilon = 1e-9;

// Dinic's maximum flow on a small directed graph; vertices are dense ints.
class FlowNetwork {
 public:
  explicit FlowNetwork(int vertices) : adjacent_(static_cast<size_t>(vertices)) {}

  void AddEdge(int from, int to, double capacity) {
    adjacent_[static_cast<size_t>(from)].push_back(static_cast<int>(edges_.size()));
    edges_.push_back({to, capacity});
    adjacent_[static_cast<size_t>(to)].push_back(static_cast<int>(edges_.size()));
    edges_.push_back({from, 0});
  }

  double MaxFlow(int source, int sink) {
    double total = 0;
    while (Levels(source, sink)) {
      next_.assign(adjacent_.size(), 0);
      while (double pushed = Push(source, sink, kUncuttable)) {
        total += pushed;
        if (total >= kUncuttable / 2) return total;
      }
    }
    return total;
  }

  // After MaxFlow: the vertices the source still reaches through unsaturated edges.
  std::vector<bool> SourceSide(int source) const {
    std::vector<bool> seen(adjacent_.size(), false);
    std::deque<int> queue{source};
    seen[static_cast<size_t>(source)] = true;
    while (!queue.empty()) {
      const int v = queue.front();
      queue.pop_front();
      for (int e : adjacent_[static_cast<size_t>(v)]) {
        const Edge& edge = edges_[static_cast<size_t>(e)];
        if (edge.residual > Slack(e) && !seen[static_cast<size_t>(edge.to)]) {
          seen[static_cast<size_t>(edge.to)] = true;
          queue.push_back(edge.to);
        }
      }
    }
    return seen;
  }

 private:
  struct Edge {
    int to;
    double residual;
  };

  double Slack(int e) const {
    const double scale =
        edges_[static_cast<size_t>(e)].residual + edges_[static_cast<size_t>(e ^ 1)].residual;
    return kResidualEpsilon * std::max(1.0, scale);
  }

  bool Levels(int source, int sink) {
    level_.assign(adjacent_.size(), -1);
    std::deque<int> queue{source};
    level_[static_cast<size_t>(source)] = 0;
    while (!queue.empty()) {
      const int v = queue.front();
      queue.pop_front();
      for (int e : adjacent_[static_cast<size_t>(v)]) {
        const Edge& edge = edges_[static_cast<size_t>(e)];
        if (edge.residual > Slack(e) && level_[static_cast<size_t>(edge.to)] < 0) {
          level_[static_cast<size_t>(edge.to)] = level_[static_cast<size_t>(v)] + 1;
          queue.push_back(edge.to);
        }
      }
    }
    return level_[static_cast<size_t>(sink)] >= 0;
  }

  double Push(int v, int sink, double limit) {
    if (v == sink) return limit;
    const auto at = static_cast<size_t>(v);
    for (size_t& i = next_[at]; i < adjacent_[at].size(); ++i) {
      const int e = adjacent_[at][i];
      Edge& edge = edges_[static_cast<size_t>(e)];
      if (edge.residual <= Slack(e) || level_[static_cast<size_t>(edge.to)] != level_[at] + 1)
        continue;
      if (double pushed = Push(edge.to, sink, std::min(limit, edge.residual))) {
        edge.residual -= pushed;
        edges_[static_cast<size_t>(e ^ 1)].residual += pushed;
        return pushed;
      }
    }
    return 0;
  }

  std::vector<std::vector<int>> adjacent_;
  std::vector<Edge> edges_;
  std::vector<int> level_;
  std::vector<size_t> next_;
};

// The mutable state of one partition; PartitionLikeInductor() is its facade.
class Partitioner {
 public:
  Partitioner(const Graph& graph, const OpRegistry& registry, const std::vector<NodeId>& order,
              const GradientFlow& gradients, const ProgramDTypes& dtypes, const ViewAliasing& views,
              std::vector<ValueId> model_outputs)
      : g_(graph),
        registry_(registry),
        order_(order),
        gradients_(gradients),
        dtypes_(dtypes),
        views_(views),
        model_outputs_(std::move(model_outputs)),
        bindings_(&graph.symbols()) {
    for (size_t s = 0; s < graph.symbols().size(); ++s)
      bindings_.Bind(static_cast<SymbolId>(s), kPartitionSymbolValue);
  }

  CompiledPartition Run() {
    CompiledPartition result;
    result.saves_compiled.assign(g_.num_nodes(), false);
    CollectBackwardReads();
    const int values = static_cast<int>(g_.num_values());
    const int masks = static_cast<int>(mask_nodes_.size());
    source_ = 2 * (values + masks);
    sink_ = source_ + 1;
    FlowNetwork network(sink_ + 1);
    AddValueEdges(network);
    AddMaskEdges(network);
    if (network.MaxFlow(source_, sink_) >= kUncuttable / 2) return result;  // nothing finite
    const std::vector<bool> source_side = network.SourceSide(source_);
    const std::vector<bool> needed = NeededInBackward();
    // A view allocates nothing: it is re-run only where its base is (a view of a saved value
    // keeps reading the saved base).
    std::vector<bool> rerun(g_.num_nodes(), false);
    for (NodeId n : order_) {
      if (!RunsAtRuntime(g_, n) || !ReadsActivation(n)) continue;
      const Node& node = g_.node(n);
      if (IsView(n)) {
        const NodeId base = node.inputs.empty() ? NodeId() : g_.value(node.inputs[0]).producer;
        rerun[n.index()] = base.valid() && rerun[base.index()];
      } else {
        rerun[n.index()] = std::any_of(node.outputs.begin(), node.outputs.end(), [&](ValueId o) {
          return InNetwork(o) && needed[o.index()] && !source_side[In(o)];
        });
      }
      if (rerun[n.index()]) result.recompute.push_back(n);
    }
    std::sort(result.recompute.begin(), result.recompute.end());
    for (size_t k = 0; k < mask_nodes_.size(); ++k) {
      const NodeId m = mask_nodes_[k];
      const int in = MaskIn(static_cast<int>(k));
      if (source_side[static_cast<size_t>(in)] && !source_side[static_cast<size_t>(in + 1)] &&
          !std::binary_search(result.recompute.begin(), result.recompute.end(), m))
        result.saves_compiled[m.index()] = true;
    }
    return result;
  }

 private:
  // Activations only: parameters cost nothing to save and constants are folded.
  bool InNetwork(ValueId v) const {
    return IsRuntimeValue(g_, v) && g_.value(v).kind != ValueKind::kParameter;
  }
  size_t In(ValueId v) const { return 2 * v.index(); }
  int MaskIn(int k) const { return 2 * (static_cast<int>(g_.num_values()) + k); }

  const OpSchema& SchemaOf(NodeId n) const {
    const Node& node = g_.node(n);
    return registry_.FindOrUnknown(node.op_type, node.domain);
  }
  bool IsView(NodeId n) const { return views_.node_is_view[n.index()]; }
  // partitioners.py OpTypes.is_fusible: pointwise ops (dropout among them), views. A fused
  // attention that draws its own dropout is stochastic but no pointwise op: not fusible.
  bool Fusible(NodeId n) const { return SchemaOf(n).pointwise || IsView(n); }
  // A node that reads at least one activation (one reading only parameters is left as it is).
  bool ReadsActivation(NodeId n) const {
    const Node& node = g_.node(n);
    return std::any_of(node.inputs.begin(), node.inputs.end(),
                       [&](ValueId u) { return InNetwork(u); });
  }

  // The node's context as autograd sees it: an activation nothing differentiates, or a frozen
  // parameter, is no input to save for.
  OpContext ContextOf(NodeId n) const {
    OpContext ctx = MakeOpContext(g_, n);
    const Node& node = g_.node(n);
    for (size_t i = 0; i < node.inputs.size() && i < ctx.inputs.size(); ++i) {
      const ValueId u = node.inputs[i];
      if (!IsRuntimeValue(g_, u)) continue;
      if (ctx.inputs[i].kind == ValueKind::kIntermediate && !gradients_.requires_grad[u.index()])
        ctx.inputs[i].kind = ValueKind::kInput;
      if (ctx.inputs[i].kind == ValueKind::kParameter && g_.value(u).frozen)
        ctx.inputs[i].kind = ValueKind::kInput;
    }
    return ctx;
  }

  // The activations `saved` names for node n.
  std::vector<ValueId> SavedValues(NodeId n, const std::vector<SavedTensor>& saved) const {
    const Node& node = g_.node(n);
    std::vector<ValueId> out;
    for (const SavedTensor& s : saved) {
      const auto i = static_cast<size_t>(s.index);
      ValueId v;
      if (s.source == SavedTensor::Source::kInput && i < node.inputs.size()) v = node.inputs[i];
      if (s.source == SavedTensor::Source::kOutput && i < node.outputs.size()) v = node.outputs[i];
      if (v.valid() && InNetwork(v)) out.push_back(v);
    }
    return out;
  }

  // Per node with a backward step: what it reads, whether that backward fuses, and the ops that
  // offer a cheaper compiled cut. Marks values read by a non-fusible backward (through views).
  void CollectBackwardReads() {
    read_in_backward_.assign(g_.num_values(), false);
    materialized_backward_.assign(g_.num_values(), false);
    fused_reader_only_.assign(g_.num_values(), true);
    makes_extras_.assign(g_.num_nodes(), false);
    saved_by_.assign(g_.num_nodes(), {});
    for (NodeId m : order_) {
      if (!RunsAtRuntime(g_, m) || !gradients_.needs_backward[m.index()]) continue;
      const OpSchema& schema = SchemaOf(m);
      if (!schema.saved_for_backward) continue;
      const OpContext ctx = ContextOf(m);
      const std::vector<SavedTensor> saved = schema.saved_for_backward(ctx);
      makes_extras_[m.index()] = std::any_of(saved.begin(), saved.end(), [](const SavedTensor& s) {
        return s.source == SavedTensor::Source::kExtra;
      });
      saved_by_[m.index()] = SavedValues(m, saved);
      const bool fusible = Fusible(m);
      for (ValueId v : saved_by_[m.index()]) {
        read_in_backward_[v.index()] = true;
        if (!fusible) fused_reader_only_[v.index()] = false;
        // is_materialized_backwards follows views to their base.
        for (ValueId u = v; !fusible && u.valid() && InNetwork(u);) {
          materialized_backward_[u.index()] = true;
          const NodeId p = g_.value(u).producer;
          u = p.valid() && IsView(p) && !g_.node(p).inputs.empty() ? g_.node(p).inputs[0]
                                                                   : ValueId();
        }
      }
      if (schema.saved_when_compiled && !saved_by_[m.index()].empty() && !makes_extras_[m.index()])
        mask_nodes_.push_back(m);
    }
  }

  // partitioners.py `should_ban_recomputation`, for the value's producer.
  bool Banned(ValueId v) const {
    const Value& value = g_.value(v);
    if (!value.producer.valid() || value.is_graph_output ||
        std::find(model_outputs_.begin(), model_outputs_.end(), v) != model_outputs_.end())
      return true;
    const NodeId n = value.producer;
    if (IsView(n)) return false;  // views are never banned
    const OpSchema& s = SchemaOf(n);
    return !s.pointwise || s.stochastic || makes_extras_[n.index()] ||
           materialized_backward_[v.index()] || AddsLinearBias(n);
  }

  // nn.Linear exported as MatMul + Add(bias): torch runs one addmm, whose output the partitioner
  // never recomputes, so the bias add is part of the linear layer (OpSchema::is_linear_layer:
  // a parameter added to its output is its bias).
  bool AddsLinearBias(NodeId n) const {
    const Node& node = g_.node(n);
    if (!SchemaOf(n).adds_inputs || node.inputs.size() != 2) return false;
    for (size_t i = 0; i < 2; ++i) {
      const ValueId bias = node.inputs[i];
      const NodeId layer = g_.value(node.inputs[1 - i]).producer;
      if (bias.valid() && g_.value(bias).kind == ValueKind::kParameter && layer.valid() &&
          SchemaOf(layer).is_linear_layer)
        return true;
    }
    return false;
  }

  // dist_from_bw: 1 for a value backward reads, else one more than its nearest reader's.
  std::vector<int> DistanceFromBackward() const {
    std::vector<int> distance(g_.num_values(), kMaxDistance);
    for (size_t v = 0; v < g_.num_values(); ++v)
      if (read_in_backward_[v]) distance[v] = 1;
    for (auto it = order_.rbegin(); it != order_.rend(); ++it) {
      const Node& node = g_.node(*it);
      int nearest = kMaxDistance;
      for (ValueId o : node.outputs) nearest = std::min(nearest, distance[o.index()]);
      for (ValueId u : node.inputs)
        if (u.valid()) distance[u.index()] = std::min(distance[u.index()], nearest + 1);
    }
    return distance;
  }

  double Bytes(ValueId v, DType dtype) const {
    const Expected<int64_t> elements = g_.value(v).shape.NumElements().Evaluate(bindings_);
    if (!g_.value(v).shape.known || !elements.ok()) return kUncuttable;
    return static_cast<double>(*elements) * static_cast<double>(ByteSize(dtype));
  }

  // get_node_weight: views are not saved on their own; every other value costs its bytes,
  // biased toward backward and doubled when all its readers fuse (is_materialized is false).
  double Weight(ValueId v, const std::vector<int>& distance) const {
    const NodeId p = g_.value(v).producer;
    if (p.valid() && IsView(p)) return kUncuttable;
    const int d = std::clamp(distance[v.index()], 1, kMaxDistance);
    const DType stored = dtypes_.value[v.index()];
    const DType dtype = stored != DType::kUndefined ? stored : g_.value(v).dtype;
    double weight = Bytes(v, dtype) * std::pow(kDistanceBias, d);
    bool materialized = !p.valid() || !Fusible(p) || !fused_reader_only_[v.index()];
    for (NodeId c : g_.value(v).consumers) materialized = materialized || !Fusible(c);
    return materialized ? weight : 2 * weight;
  }

  void AddValueEdges(FlowNetwork& network) const {
    const std::vector<int> distance = DistanceFromBackward();
    for (size_t i = 0; i < g_.num_values(); ++i) {
      const ValueId v(i);
      if (!InNetwork(v)) continue;
      const int in = static_cast<int>(In(v));
      network.AddEdge(in, in + 1, Weight(v, distance));
      if (Banned(v)) network.AddEdge(source_, in, kUncuttable);
      for (NodeId c : g_.value(v).consumers)
        for (ValueId o : g_.node(c).outputs)
          if (InNetwork(o)) network.AddEdge(in + 1, static_cast<int>(In(o)), kUncuttable);
    }
    std::vector<bool> masked(g_.num_nodes(), false);
    for (NodeId m : mask_nodes_) masked[m.index()] = true;
    for (size_t n = 0; n < g_.num_nodes(); ++n)
      if (!masked[n])
        for (ValueId v : saved_by_[n])
          network.AddEdge(static_cast<int>(In(v)) + 1, sink_, kUncuttable);
  }

  // Each op with a compiled cut: its eager saved tensors feed the mask, the mask feeds the sink.
  void AddMaskEdges(FlowNetwork& network) const {
    for (size_t k = 0; k < mask_nodes_.size(); ++k) {
      const NodeId m = mask_nodes_[k];
      const int in = MaskIn(static_cast<int>(k));
      double bytes = 0;
      for (const SavedTensor& s : SchemaOf(m).saved_when_compiled(ContextOf(m)))
        if (s.source == SavedTensor::Source::kExtra) {
          const Expected<int64_t> elements = s.shape.NumElements().Evaluate(bindings_);
          bytes += elements.ok()
                       ? static_cast<double>(*elements) * static_cast<double>(ByteSize(s.dtype))
                       : kUncuttable;
        }
      // Read by backward directly (distance 1), and only by a fused kernel: doubled.
      network.AddEdge(in, in + 1, 2 * bytes * kDistanceBias);
      for (ValueId v : saved_by_[m.index()])
        network.AddEdge(static_cast<int>(In(v)) + 1, in, kUncuttable);
      network.AddEdge(in + 1, sink_, kUncuttable);
    }
  }

  // Values from which backward's reads are reached through forward edges (the partitioner's
  // required_bw closure): only these are ever re-run.
  std::vector<bool> NeededInBackward() const {
    std::vector<bool> needed = read_in_backward_;
    for (auto it = order_.rbegin(); it != order_.rend(); ++it) {
      const Node& node = g_.node(*it);
      bool any = false;
      for (ValueId o : node.outputs) any = any || needed[o.index()];
      if (!any) continue;
      for (ValueId u : node.inputs)
        if (u.valid()) needed[u.index()] = true;
    }
    return needed;
  }

  const Graph& g_;
  const OpRegistry& registry_;
  const std::vector<NodeId>& order_;
  const GradientFlow& gradients_;
  const ProgramDTypes& dtypes_;
  const ViewAliasing& views_;
  std::vector<ValueId> model_outputs_;  // the loss terms' outputs
  Bindings bindings_;
  int source_ = 0;
  int sink_ = 0;
  std::vector<bool> read_in_backward_;          // per value: some backward step reads it
  std::vector<bool> materialized_backward_;     // per value: a non-fusible backward reads it
  std::vector<bool> fused_reader_only_;         // per value: every backward reader fuses
  std::vector<bool> makes_extras_;              // per node: forward makes buffers for backward
  std::vector<std::vector<ValueId>> saved_by_;  // per node: the activations its backward reads
  std::vector<NodeId> mask_nodes_;              // ops offering OpSchema::saved_when_compiled
};

}  // namespace

CompiledPartition PartitionLikeInductor(const Graph& graph, const OpRegistry& registry,
                                        const std::vector<NodeId>& order,
                                        const GradientFlow& gradients, const ProgramDTypes& dtypes,
                                        const ViewAliasing& views,
                                        const std::vector<ValueId>& model_outputs) {
  return Partitioner(graph, registry, order, gradients, dtypes, views, model_outputs).Run();
}

}  // namespace memplan
