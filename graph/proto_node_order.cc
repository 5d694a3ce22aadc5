#include "graph/proto_node_order.h"

#include <queue>
#include <string>
#include <unordered_map>
#include <vector>

namespace memplan {

bool SortProtoNodesTopologically(onnx::GraphProto& graph) {
  const int n = graph.node_size();
  std::unordered_map<std::string, int> producer;
  for (int i = 0; i < n; ++i)
    for (const auto& out : graph.node(i).output())
      if (!out.empty()) producer.emplace(out, i);
  std::vector<int> missing(static_cast<size_t>(n), 0);
  std::vector<std::vector<int>> consumers(static_cast<size_t>(n));
  for (int i = 0; i < n; ++i) {
    for (const auto& in : graph.node(i).input()) {
      auto it = producer.find(in);
      if (it == producer.end()) continue;  // a graph input, an initializer or an optional gap
      consumers[static_cast<size_t>(it->second)].push_back(i);
      ++missing[static_cast<size_t>(i)];
    }
  }
  // Min-heap of ready node indices: the file's order among ready nodes.
  std::priority_queue<int, std::vector<int>, std::greater<>> ready;
  for (int i = 0; i < n; ++i)
    if (missing[static_cast<size_t>(i)] == 0) ready.push(i);
  std::vector<int> order;
  order.reserve(static_cast<size_t>(n));
  while (!ready.empty()) {
    int i = ready.top();
    ready.pop();
    order.push_back(i);
    for (int c : consumers[static_cast<size_t>(i)])
      if (--missing[static_cast<size_t>(c)] == 0) ready.push(c);
  }
  if (static_cast<int>(order.size()) != n) return false;
  google::protobuf::RepeatedPtrField<onnx::NodeProto> sorted;
  for (int i : order) sorted.Add()->Swap(graph.mutable_node(i));
  graph.mutable_node()->Swap(&sorted);
  return true;
}

}  // namespace memplan
