#include "graph/graph.h"

#include <functional>
#include <queue>

#include "graph/dependency_cycles.h"

namespace memplan {

ValueId Graph::AddValue(Value value) {
  ValueId id(values_.size());
  value.id = id;
  if (!value.name.empty()) value_by_name_.emplace(value.name, id);
  values_.push_back(std::move(value));
  return id;
}

NodeId Graph::AddNode(Node node) {
  NodeId id(nodes_.size());
  node.id = id;
  for (ValueId in : node.inputs) {
    if (in.valid()) values_.at(in.index()).consumers.push_back(id);
  }
  for (ValueId out : node.outputs) {
    if (out.valid()) values_.at(out.index()).producer = id;
  }
  if (!node.name.empty()) node_by_name_.emplace(node.name, id);
  nodes_.push_back(std::move(node));
  return id;
}

void Graph::MarkInput(ValueId id) {
  values_.at(id.index()).kind = ValueKind::kInput;
  inputs_.push_back(id);
}

void Graph::MarkOutput(ValueId id) {
  values_.at(id.index()).is_graph_output = true;
  outputs_.push_back(id);
}

std::optional<ValueId> Graph::FindValue(const std::string& name) const {
  if (auto it = value_by_name_.find(name); it != value_by_name_.end()) return it->second;
  return std::nullopt;
}

std::optional<NodeId> Graph::FindNode(const std::string& name) const {
  if (auto it = node_by_name_.find(name); it != node_by_name_.end()) return it->second;
  return std::nullopt;
}

Expected<std::vector<NodeId>> Graph::TopologicalOrder() const {
  // Kahn's algorithm over the producer -> consumer links (one edge per input slot), taking the
  // lowest file index among ready nodes: exporters write nodes in execution order, and keeping it
  // keeps the memory profile the framework would have. Boost's topological_sort is a depth-first
  // reverse post-order, which reorders independent branches (a diamond a->{b,c}->d comes out
  // a, c, b, d), so it cannot keep that order.
  const size_t n = nodes_.size();
  std::vector<size_t> pending(n, 0);
  for (const Node& node : nodes_) {
    for (ValueId in : node.inputs) {
      if (in.valid() && values_[in.index()].producer.valid()) ++pending[node.id.index()];
    }
  }
  std::priority_queue<size_t, std::vector<size_t>, std::greater<>> ready;
  for (size_t v = 0; v < n; ++v) {
    if (pending[v] == 0) ready.push(v);
  }
  std::vector<NodeId> order;
  order.reserve(n);
  while (!ready.empty()) {
    const size_t v = ready.top();
    ready.pop();
    order.emplace_back(v);
    for (ValueId out : nodes_[v].outputs) {
      if (!out.valid()) continue;
      for (NodeId consumer : values_[out.index()].consumers) {
        if (--pending[consumer.index()] == 0) ready.push(consumer.index());
      }
    }
  }
  if (order.size() == n) return order;
  const std::vector<NodeId> cycle = FindDependencyCycle(*this);
  MEMPLAN_CHECK(!cycle.empty());  // Kahn stops short only on a cycle
  std::string path;
  for (NodeId id : cycle) {
    path += "node '" + nodes_[id.index()].name + "' (" + nodes_[id.index()].op_type + ") -> ";
  }
  path += "node '" + nodes_[cycle.front().index()].name + "'";
  return MakeError("the graph has a cycle: " + path);
}

}  // namespace memplan
