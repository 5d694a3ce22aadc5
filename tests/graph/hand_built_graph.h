#pragma once
// The two steps every hand-built test graph repeats: add a value with its shape and kind, and add
// a node that reads some values and writes others. The builders in the graph, analyzer and
// runtime tests call these and keep only what is particular to them (names, symbols, marking).

#include <string>
#include <vector>

#include "graph/graph.h"

namespace memplan::testing {

// Adds a value `name` of `kind` with `shape` and `dtype` to `graph`.
inline ValueId NewValue(Graph& graph, const std::string& name, Shape shape, ValueKind kind,
                        DType dtype = DType::kFloat32) {
  Value v;
  v.name = name;
  v.dtype = dtype;
  v.shape = std::move(shape);
  v.kind = kind;
  return graph.AddValue(std::move(v));
}

// Adds a node `name` of `op_type` (in `domain`; "" is ai.onnx) reading `inputs` and writing
// `outputs` to `graph`.
inline NodeId NewNode(Graph& graph, const std::string& name, const std::string& op_type,
                      std::vector<ValueId> inputs, std::vector<ValueId> outputs,
                      Attributes attributes = {}, const std::string& domain = "") {
  Node n;
  n.name = name;
  n.op_type = op_type;
  n.domain = domain;
  n.inputs = std::move(inputs);
  n.outputs = std::move(outputs);
  n.attributes = std::move(attributes);
  return graph.AddNode(std::move(n));
}

}  // namespace memplan::testing
