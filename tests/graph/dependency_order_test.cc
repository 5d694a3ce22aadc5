// Node order and cycles on hand-built graphs: the topological order keeps file order among
// independent nodes (Kahn, lowest id first), and a cycle is named node by node in dependency
// order (Boost.Graph strong_components, then the shortest cycle through its lowest-id node).

#include <string>
#include <vector>

#include <catch2/catch.hpp>

#include "graph/dependency_cycles.h"
#include "graph/graph.h"
#include "tests/graph/hand_built_graph.h"

namespace memplan {
namespace {

// Values are created on first mention; AddOp names a node and its single output.
class HandGraph {
 public:
  ValueId Input(const std::string& name) {
    const ValueId id = Named(name);
    graph.MarkInput(id);
    return id;
  }
  void AddOp(const std::string& node_name, const std::vector<std::string>& inputs,
             const std::string& output) {
    std::vector<ValueId> ins;
    for (const std::string& in : inputs) ins.push_back(Named(in));
    testing::NewNode(graph, node_name, "Op", std::move(ins), {Named(output)});
  }
  std::vector<std::string> Names(const std::vector<NodeId>& ids) const {
    std::vector<std::string> names;
    for (NodeId id : ids) names.push_back(graph.node(id).name);
    return names;
  }
  std::vector<std::string> Order() const {
    auto order = graph.TopologicalOrder();
    REQUIRE(order.ok());
    return Names(*order);
  }

  Graph graph;

 private:
  ValueId Named(const std::string& name) {
    if (auto id = graph.FindValue(name)) return *id;
    Value v;
    v.name = name;
    return graph.AddValue(std::move(v));
  }
};

using Names = std::vector<std::string>;

TEST_CASE("topological order: a diamond keeps file order", "[graph][order]") {
  // a -> {b, c} -> d. Boost's depth-first topological_sort would give a, c, b, d; file order
  // a, b, c, d is already topological and is kept.
  HandGraph g;
  g.Input("x");
  g.AddOp("a", {"x"}, "va");
  g.AddOp("b", {"va"}, "vb");
  g.AddOp("c", {"va"}, "vc");
  g.AddOp("d", {"vb", "vc"}, "vd");
  CHECK(g.Order() == Names{"a", "b", "c", "d"});
  CHECK(FindDependencyCycle(g.graph).empty());
}

TEST_CASE("topological order: consumers listed before producers move after them",
          "[graph][order]") {
  // File order: relu (reads vconv), conv (reads x), out (reads vrelu and x). conv is the only
  // node ready at first; then relu (id 0) is ready before out (id 2).
  HandGraph g;
  g.Input("x");
  g.AddOp("relu", {"vconv"}, "vrelu");
  g.AddOp("conv", {"x"}, "vconv");
  g.AddOp("out", {"vrelu", "x"}, "vout");
  CHECK(g.Order() == Names{"conv", "relu", "out"});
}

TEST_CASE("topological order: a node reading one value twice waits for it once", "[graph][order]") {
  // square = Mul(v, v): two input slots, one producer; it runs right after that producer.
  HandGraph g;
  g.Input("x");
  g.AddOp("p", {"x"}, "v");
  g.AddOp("square", {"v", "v"}, "s");
  CHECK(g.Order() == Names{"p", "square"});
}

TEST_CASE("cycles: the shortest cycle through the lowest-id node on one", "[graph][order]") {
  // n0 is upstream of the cycle and n4 downstream; the cycle n1 -> n2 -> n3 -> n1 also has the
  // chord n1 -> n3, so the shortest cycle through n1 is n1 -> n3 -> n1.
  HandGraph g;
  g.Input("x");
  g.AddOp("n0", {"x"}, "v0");
  g.AddOp("n1", {"v0", "v3"}, "v1");
  g.AddOp("n2", {"v1"}, "v2");
  g.AddOp("n3", {"v2", "v1"}, "v3");
  g.AddOp("n4", {"v3"}, "v4");
  CHECK(g.Names(FindDependencyCycle(g.graph)) == Names{"n1", "n3"});
  auto order = g.graph.TopologicalOrder();
  REQUIRE_FALSE(order.ok());
  CHECK(order.error().message ==
        "the graph has a cycle: node 'n1' (Op) -> node 'n3' (Op) -> node 'n1'");
}

TEST_CASE("cycles: a node reading its own output", "[graph][order]") {
  HandGraph g;
  g.Input("x");
  g.AddOp("ok", {"x"}, "v0");
  g.AddOp("loop", {"v0", "v1"}, "v1");
  CHECK(g.Names(FindDependencyCycle(g.graph)) == Names{"loop"});
  auto order = g.graph.TopologicalOrder();
  REQUIRE_FALSE(order.ok());
  CHECK(order.error().message == "the graph has a cycle: node 'loop' (Op) -> node 'loop'");
}

}  // namespace
}  // namespace memplan
