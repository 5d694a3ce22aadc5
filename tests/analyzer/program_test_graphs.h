#pragma once
// Hand-built micro-graphs for the training-program, simulator and allocator tests.

#include <string>
#include <vector>

#include "graph/graph.h"

namespace memplan::testing {

class TestGraph {
 public:
  TestGraph() {
    batch = graph.symbols().Intern("batch");
    graph.set_batch_symbol(batch);
  }

  Dim B() const { return Dim::Symbol(batch); }

  ValueId Input(const std::string& name, std::vector<Dim> dims, DType dtype = DType::kFloat32) {
    ValueId id = Add(name, std::move(dims), dtype, ValueKind::kInput);
    graph.MarkInput(id);
    return id;
  }
  ValueId Param(const std::string& name, std::vector<Dim> dims, DType dtype = DType::kFloat32) {
    return Add(name, std::move(dims), dtype, ValueKind::kParameter);
  }
  ValueId Constant(const std::string& name, std::vector<Dim> dims, DType dtype = DType::kInt64) {
    return Add(name, std::move(dims), dtype, ValueKind::kConstant);
  }
  // One node `name` of `op_type` reading `inputs` and writing one value `out`.
  ValueId Op(const std::string& op_type, const std::string& name, std::vector<ValueId> inputs,
             const std::string& out, std::vector<Dim> dims, DType dtype = DType::kFloat32) {
    ValueId o = Add(out, std::move(dims), dtype, ValueKind::kIntermediate);
    Node node;
    node.name = name;
    node.op_type = op_type;
    node.inputs = std::move(inputs);
    node.outputs = {o};
    graph.AddNode(std::move(node));
    return o;
  }
  void Output(ValueId v) { graph.MarkOutput(v); }
  NodeId NodeNamed(const std::string& name) const { return *graph.FindNode(name); }

  Bindings Bind(int64_t b) const {
    Bindings bindings(&graph.symbols());
    bindings.Bind(batch, b);
    return bindings;
  }

  Graph graph;
  SymbolId batch = 0;

 private:
  ValueId Add(const std::string& name, std::vector<Dim> dims, DType dtype, ValueKind kind) {
    Value v;
    v.name = name;
    v.dtype = dtype;
    v.shape = Shape{std::move(dims)};
    v.kind = kind;
    return graph.AddValue(std::move(v));
  }
};

}  // namespace memplan::testing
