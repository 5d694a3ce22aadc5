#include "analyzer/recompute/chain_decomposition.h"

#include <algorithm>
#include <optional>

namespace memplan {
namespace {

// Per-value facts the cut search needs, indexed by ValueId.
struct ValueLiveness {
  bool is_activation = false;      // an intermediate that depends on a parameter: has a gradient
  bool is_parameter_free = false;  // an intermediate computed only from inputs and constants
  int64_t first = -1;              // topological position of its producer
  int64_t last = -1;               // last consumer's position; num_nodes for graph outputs
};

class ChainDecomposer {
 public:
  ChainDecomposer(const Graph& graph, const ChainCostFunctions& costs,
                  const ChainDecompositionOptions& options)
      : graph_(graph), costs_(costs), options_(options) {}

  Expected<ChainDecomposition> Run() {
    if (!costs_.value_bytes || !costs_.forward_time) {
      return MakeError("chain decomposition needs value_bytes and forward_time functions");
    }
    if (graph_.num_nodes() == 0)
      return MakeError("cannot plan recompute for a graph with no nodes");
    MEMPLAN_TRY(order_, graph_.TopologicalOrder());
    position_.assign(graph_.num_nodes(), -1);
    for (size_t p = 0; p < order_.size(); ++p)
      position_[order_[p].index()] = static_cast<int64_t>(p);
    ClassifyValues();
    FindCuts();
    return BuildChain();
  }

 private:
  // Which intermediates depend on a parameter (activations) and which only on inputs and
  // constants (parameter-free), walking nodes in topological order; and their live ranges.
  void ClassifyValues() {
    liveness_.assign(graph_.num_values(), ValueLiveness{});
    const int64_t num_nodes = static_cast<int64_t>(order_.size());
    for (NodeId id : order_) {
      const Node& node = graph_.node(id);
      bool depends_on_parameter = false;
      for (ValueId in : node.inputs) {
        if (!in.valid()) continue;
        const Value& v = graph_.value(in);
        depends_on_parameter |=
            v.kind == ValueKind::kParameter || liveness_[in.index()].is_activation;
      }
      for (ValueId out : node.outputs) {
        if (!out.valid() || graph_.value(out).kind != ValueKind::kIntermediate) continue;
        ValueLiveness& l = liveness_[out.index()];
        l.is_activation = depends_on_parameter;
        l.is_parameter_free = !depends_on_parameter;
        l.first = position_[id.index()];
        l.last = l.first;
        for (NodeId consumer : graph_.value(out).consumers) {
          l.last = std::max(l.last, position_[consumer.index()]);
        }
        if (graph_.value(out).is_graph_output) l.last = num_nodes;
      }
    }
  }

  // A boundary p (after the node at position p) is crossed by activations with
  // first <= p < last. Counting them and summing their ids with a sweep names the single crossing
  // value wherever the count is one.
  void FindCuts() {
    const size_t n = order_.size();
    std::vector<int64_t> count_delta(n + 1, 0), id_delta(n + 1, 0);
    for (size_t v = 0; v < liveness_.size(); ++v) {
      const ValueLiveness& l = liveness_[v];
      if (!l.is_activation || l.last <= l.first) continue;
      count_delta[static_cast<size_t>(l.first)] += 1;
      count_delta[static_cast<size_t>(l.last)] -= 1;
      id_delta[static_cast<size_t>(l.first)] += static_cast<int64_t>(v);
      id_delta[static_cast<size_t>(l.last)] -= static_cast<int64_t>(v);
    }
    int64_t count = 0, id_sum = 0;
    ValueId previous;
    for (size_t p = 0; p + 1 < n; ++p) {
      count += count_delta[p];
      id_sum += id_delta[p];
      if (count != 1) continue;
      const ValueId crossing(static_cast<int32_t>(id_sum));
      // The same value crossing consecutive cuts: the nodes between them produced nothing that
      // lives on (shape queries, dead branches); they join the next stage.
      if (crossing == previous) continue;
      cut_positions_.push_back(p);
      cut_values_.push_back(crossing);
      previous = crossing;
    }
  }

  double BackwardTime(NodeId id) const {
    return costs_.backward_time ? costs_.backward_time(id)
                                : options_.backward_to_forward_ratio * costs_.forward_time(id);
  }

  Expected<ChainDecomposition> BuildChain() {
    ChainDecomposition result;
    for (size_t v = 0; v < liveness_.size(); ++v) {
      if (!liveness_[v].is_parameter_free) continue;
      const ValueId id(v);
      result.parameter_free_values.push_back(id);
      result.chain.input_bytes += costs_.value_bytes(id);
    }

    size_t begin = 0;
    for (size_t s = 0; s <= cut_positions_.size(); ++s) {
      const bool last_stage = s == cut_positions_.size();
      const size_t end = last_stage ? order_.size() : static_cast<size_t>(cut_positions_[s]) + 1;
      ChainStageNodes nodes;
      nodes.nodes.assign(order_.begin() + static_cast<std::ptrdiff_t>(begin),
                         order_.begin() + static_cast<std::ptrdiff_t>(end));
      if (!last_stage) {
        nodes.output = cut_values_[s];
        nodes.output_producer = graph_.value(nodes.output).producer;
      }
      result.chain.stages.push_back(MakeStage(nodes, begin, end));
      result.stages.push_back(std::move(nodes));
      begin = end;
    }
    MEMPLAN_RETURN_IF_ERROR(ValidateChain(result.chain));
    return result;
  }

  // Sizes and times of the stage made of topological positions [begin, end).
  ChainStage MakeStage(const ChainStageNodes& nodes, size_t begin, size_t end) const {
    ChainStage stage;
    const NodeId last_node = nodes.nodes.back();
    stage.name =
        graph_.node(nodes.output_producer.valid() ? nodes.output_producer : last_node).name;
    std::vector<int64_t> live_delta(end - begin + 1, 0);
    for (NodeId id : nodes.nodes) {
      stage.forward_time += costs_.forward_time(id);
      stage.backward_time += BackwardTime(id);
      for (ValueId out : graph_.node(id).outputs) {
        if (!out.valid() || !liveness_[out.index()].is_activation) continue;
        const ValueLiveness& l = liveness_[out.index()];
        const int64_t bytes = costs_.value_bytes(out);
        const bool is_output = nodes.output.valid()
                                   ? out == nodes.output
                                   : l.last > l.first && l.last >= static_cast<int64_t>(end);
        if (is_output) {
          stage.output_bytes += bytes;
          continue;
        }
        if (!costs_.saved_for_backward || costs_.saved_for_backward(out))
          stage.saved_bytes += bytes;
        // Live over positions [first, last], both inclusive (its consumer reads it while writing).
        live_delta[static_cast<size_t>(l.first) - begin] += bytes;
        const size_t stop = std::min(static_cast<size_t>(l.last), end - 1) + 1 - begin;
        live_delta[stop] -= bytes;
      }
    }
    int64_t live = 0, most = 0;
    for (size_t p = 0; p + begin < end; ++p) {
      live += live_delta[p];
      most = std::max(most, live);
    }
    stage.forward_overhead_bytes = most;
    stage.backward_overhead_bytes = most;
    return stage;
  }

  const Graph& graph_;
  const ChainCostFunctions& costs_;
  const ChainDecompositionOptions& options_;
  std::vector<NodeId> order_;
  std::vector<int64_t> position_;  // by NodeId
  std::vector<ValueLiveness> liveness_;
  std::vector<size_t> cut_positions_;
  std::vector<ValueId> cut_values_;
};

}  // namespace

Expected<ChainDecomposition> DecomposeIntoChain(const Graph& graph, const ChainCostFunctions& costs,
                                                const ChainDecompositionOptions& options) {
  return ChainDecomposer(graph, costs, options).Run();
}

Expected<RecomputeSelection> SelectRecomputeNodes(const Graph& graph,
                                                  const ChainDecomposition& decomposition,
                                                  const RecomputeSchedule& schedule) {
  const int num_stages = decomposition.chain.num_stages();
  if (schedule.num_stages() != num_stages) {
    return MakeError("the recompute schedule has " + std::to_string(schedule.num_stages()) +
                     " stages but the decomposed chain has " + std::to_string(num_stages));
  }
  RecomputeSelection selection;
  for (int k = 0; k < num_stages; ++k) {
    if (!schedule.IsRecomputed(k)) continue;
    const ChainStageNodes& stage = decomposition.stages[static_cast<size_t>(k)];
    for (NodeId id : stage.nodes) {
      if (schedule.IsOutputKept(k) && id == stage.output_producer) continue;
      bool produces_activation = false;
      for (ValueId out : graph.node(id).outputs) {
        if (!out.valid() || graph.value(out).kind != ValueKind::kIntermediate) continue;
        const auto& free_values = decomposition.parameter_free_values;
        produces_activation |= !std::binary_search(free_values.begin(), free_values.end(), out);
      }
      if (produces_activation) selection.recompute_nodes.push_back(id);
    }
  }
  std::sort(selection.recompute_nodes.begin(), selection.recompute_nodes.end());
  for (int k : schedule.CheckpointStages()) {
    const NodeId producer = decomposition.stages[static_cast<size_t>(k)].output_producer;
    MEMPLAN_CHECK(producer.valid());  // only the last stage has no single output
    selection.checkpoint_nodes.push_back(producer);
    selection.checkpoint_names.push_back(graph.node(producer).name);
  }
  return selection;
}

}  // namespace memplan
