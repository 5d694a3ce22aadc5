#include "graph/graph_copy.h"

#include <catch2/catch.hpp>

#include "tests/graph/hand_built_graph.h"

namespace memplan::testing {
namespace {

TEST_CASE("a graph copy has the same ids, fields and consumer order", "[graph][copy]") {
  Graph graph;
  const SymbolId batch = graph.symbols().Intern("batch");
  graph.set_batch_symbol(batch);
  graph.ir_version = 8;
  graph.opset_imports[""] = 17;
  graph.producer_name = "pytorch";
  graph.warnings.push_back("a warning");
  const Dim b = Dim::Symbol(batch);
  ValueId x = NewValue(graph, "x", Shape{{b, 4}}, ValueKind::kInput);
  ValueId a = NewValue(graph, "a", Shape{{b, 4}}, ValueKind::kIntermediate);
  ValueId c = NewValue(graph, "c", Shape{{b, 4}}, ValueKind::kIntermediate);
  graph.MarkInput(x);
  NewNode(graph, "relu", "Relu", {x}, {a});
  NewNode(graph, "neg", "Neg", {x}, {c});
  graph.MarkOutput(a);
  graph.MarkOutput(c);
  // A rewrite that rewired x's readers left them out of node order.
  graph.mutable_value(x).consumers = {NodeId(1), NodeId(0)};

  const Graph copy = CopyGraph(graph);
  REQUIRE(copy.num_nodes() == 2);
  REQUIRE(copy.num_values() == 3);
  CHECK(copy.value(x).consumers == std::vector<NodeId>{NodeId(1), NodeId(0)});
  CHECK(copy.value(a).producer == NodeId(0));
  CHECK(copy.value(c).producer == NodeId(1));
  CHECK(copy.value(x).kind == ValueKind::kInput);
  CHECK(copy.value(a).is_graph_output);
  CHECK(copy.value(c).shape == graph.value(c).shape);
  CHECK(copy.node(NodeId(1)).op_type == "Neg");
  CHECK(copy.node(NodeId(1)).inputs == std::vector<ValueId>{x});
  CHECK(copy.inputs() == graph.inputs());
  CHECK(copy.outputs() == graph.outputs());
  CHECK(copy.FindValue("c") == c);
  CHECK(copy.FindNode("neg") == NodeId(1));
  CHECK(copy.batch_symbol() == batch);
  CHECK(copy.symbols().Name(batch) == "batch");
  CHECK(copy.ir_version == 8);
  CHECK(copy.opset_imports.at("") == 17);
  CHECK(copy.producer_name == "pytorch");
  CHECK(copy.warnings == graph.warnings);
}

}  // namespace
}  // namespace memplan::testing
