#include "graph/graph.h"

#include <boost/graph/adjacency_list.hpp>
#include <functional>
#include <queue>

namespace memplan {

// Node-to-node dependency edges (one per producer->consumer value use), kept in step with nodes_.
struct Graph::Topology {
  using Adjacency = boost::adjacency_list<boost::vecS, boost::vecS, boost::bidirectionalS>;
  Adjacency adjacency;
};

Graph::Graph() : topology_(std::make_unique<Topology>()) {}
Graph::~Graph() = default;
Graph::Graph(Graph&&) noexcept = default;
Graph& Graph::operator=(Graph&&) noexcept = default;

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
  auto vertex = boost::add_vertex(topology_->adjacency);
  MEMPLAN_CHECK(vertex == id.index());
  for (ValueId in : node.inputs) {
    if (!in.valid()) continue;
    Value& v = values_.at(in.index());
    v.consumers.push_back(id);
    if (v.producer.valid()) boost::add_edge(v.producer.index(), id.index(), topology_->adjacency);
  }
  for (ValueId out : node.outputs) {
    if (!out.valid()) continue;
    Value& v = values_.at(out.index());
    v.producer = id;
    // Consumers listed before their producer (files out of topological order) get their edges now.
    for (NodeId consumer : v.consumers)
      boost::add_edge(id.index(), consumer.index(), topology_->adjacency);
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
  // Kahn's algorithm over the Boost.Graph edges, taking the lowest file index among ready nodes:
  // exporters write nodes in execution order, and keeping it keeps the memory profile the
  // framework would have.
  const auto& g = topology_->adjacency;
  const size_t n = boost::num_vertices(g);
  std::vector<size_t> pending(n);
  std::priority_queue<size_t, std::vector<size_t>, std::greater<>> ready;
  for (size_t v = 0; v < n; ++v) {
    pending[v] = boost::in_degree(v, g);
    if (pending[v] == 0) ready.push(v);
  }
  std::vector<NodeId> order;
  order.reserve(n);
  while (!ready.empty()) {
    size_t v = ready.top();
    ready.pop();
    order.emplace_back(v);
    for (auto [e, end] = boost::out_edges(v, g); e != end; ++e) {
      size_t w = boost::target(*e, g);
      if (--pending[w] == 0) ready.push(w);
    }
  }
  if (order.size() != n) {
    for (size_t v = 0; v < n; ++v) {
      if (pending[v] > 0) {
        return MakeError("the graph has a cycle through node '" + nodes_[v].name + "' (" +
                         nodes_[v].op_type + ")");
      }
    }
  }
  return order;
}

}  // namespace memplan
