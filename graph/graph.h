#pragma once
// The model as imported: nodes (ops) and values (tensors) with dtypes and symbolic shapes.
// The edges between nodes are recorded once, as each value's producer and consumers; graph
// algorithms that need Boost.Graph (graph/dependency_cycles.h) build a view over those links when
// they run. The public surface speaks dense NodeId / ValueId only, so no Boost type leaks out of
// graph/.

#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "graph/attributes.h"
#include "graph/dim.h"
#include "graph/dtype.h"
#include "graph/expected.h"
#include "graph/ids.h"
#include "graph/symbols.h"

namespace memplan {

enum class ValueKind : uint8_t {
  kInput,         // a graph input fed per sample (images, token ids)
  kParameter,     // a floating initializer: trained, has a gradient and optimizer state
  kConstant,      // integer initializers, Constant outputs, and everything computed only from them
  kIntermediate,  // produced by a node from inputs/parameters: an activation
};

// The most elements of a tensor whose values the graph keeps for the executor (a Constant's table,
// an integer initializer; rotary cos/sin tables, additive attention masks, position ids and
// relative-position indices are a few thousand): shape folding reads at most kMaxFoldedElements
// of them. A bound, not all: import memory stays bounded by the file (8 MB per kept tensor at
// most); a larger table is an error of `verify`, never of planning.
inline constexpr int64_t kMaxKeptTensorElements = int64_t{1} << 20;

struct Value {
  ValueId id;
  std::string name;
  DType dtype = DType::kUndefined;
  Shape shape = Shape::Unknown();
  ValueKind kind = ValueKind::kIntermediate;
  NodeId producer;                // invalid for inputs, parameters and initializer constants
  std::vector<NodeId> consumers;  // in node order; a node appears once per input slot using it
  bool is_graph_output = false;
  // For kParameter: whether training updates it. Floating initializers that no gradient reaches
  // (BatchNorm running statistics, float mask buffers) are parameters in ONNX terms but buffers in
  // PyTorch's: they take memory, get no gradient and no optimizer state, and published parameter
  // counts exclude them. Set by MarkTrainableParameters (graph/trainable_parameters.h).
  bool trainable = true;
  // For a trainable kParameter: the fine-tuning plan freezes it (PyTorch's requires_grad_(False)):
  // it keeps its memory but gets no gradient and no optimizer state, and ops save nothing for its
  // gradient. Set by ApplyTrainableSelection (graph/trainable_parameters.h) and by LoRA.
  bool frozen = false;
  // Symbolic contents of small integer tensors (shape sub-graphs: Shape, Gather, Concat...),
  // one Dim per element in row-major order. Set by folding; lets Reshape/Expand targets resolve.
  std::optional<std::vector<Dim>> contents;
  // For an integer initializer too large to fold (more than kMaxFoldedElements elements, at most
  // kMaxKeptTensorElements): its values as written, row-major. Only the runtime reads them, to
  // compute with index tables such as Swin's relative_position_index or BERT's position_ids;
  // shape inference sees the shape alone. Empty otherwise.
  std::vector<int64_t> integer_data;
  // The values of a small floating constant (at most kMaxFoldedElements elements) known at import:
  // a Constant node's or initializer's, or a Concat of such. Read by the rules that need real
  // numbers (Resize's scales); never folded arithmetically (float arithmetic is not Dim
  // arithmetic). Set by shape propagation and the importer.
  std::optional<std::vector<double>> float_values;
};

struct Node {
  NodeId id;
  std::string name;  // ONNX node name (generated "<op>_<n>" when the file has none)
  std::string op_type;
  std::string domain;            // "" = ai.onnx
  std::vector<ValueId> inputs;   // invalid id for an omitted optional input
  std::vector<ValueId> outputs;  // invalid id for an omitted optional output
  Attributes attributes;
};

class Graph {
 public:
  Graph() = default;
  Graph(Graph&&) noexcept = default;
  Graph& operator=(Graph&&) noexcept = default;
  Graph(const Graph&) = delete;
  Graph& operator=(const Graph&) = delete;

  // Building. AddNode wires producer/consumers of the values it names.
  ValueId AddValue(Value value);
  NodeId AddNode(Node node);
  void MarkInput(ValueId id);
  void MarkOutput(ValueId id);

  size_t num_nodes() const { return nodes_.size(); }
  size_t num_values() const { return values_.size(); }
  const Node& node(NodeId id) const { return nodes_.at(id.index()); }
  Node& mutable_node(NodeId id) { return nodes_.at(id.index()); }
  const Value& value(ValueId id) const { return values_.at(id.index()); }
  Value& mutable_value(ValueId id) { return values_.at(id.index()); }
  const std::vector<Node>& nodes() const { return nodes_; }
  const std::vector<Value>& values() const { return values_; }
  const std::vector<ValueId>& inputs() const { return inputs_; }
  const std::vector<ValueId>& outputs() const { return outputs_; }
  std::optional<ValueId> FindValue(const std::string& name) const;
  std::optional<NodeId> FindNode(const std::string& name) const;

  // Nodes in a topological order (stable: ties keep file order). Error naming the nodes of a
  // cycle, in dependency order: "the graph has a cycle: node 'a' (Add) -> node 'b' (Relu) -> node
  // 'a'".
  Expected<std::vector<NodeId>> TopologicalOrder() const;

  SymbolTable& symbols() { return symbols_; }
  const SymbolTable& symbols() const { return symbols_; }
  // The symbol the planner varies as the micro-batch: by default the first dim of the first input.
  std::optional<SymbolId> batch_symbol() const { return batch_symbol_; }
  void set_batch_symbol(SymbolId id) { batch_symbol_ = id; }

  // Model metadata kept from the file.
  int64_t ir_version = 0;
  std::map<std::string, int64_t> opset_imports;  // domain ("" = ai.onnx) -> version
  std::string producer_name;
  std::string graph_name;
  std::vector<std::string> warnings;  // import warnings for `inspect` and `analyze`

 private:
  std::vector<Node> nodes_;
  std::vector<Value> values_;
  std::vector<ValueId> inputs_;
  std::vector<ValueId> outputs_;
  std::map<std::string, ValueId> value_by_name_;
  std::map<std::string, NodeId> node_by_name_;
  SymbolTable symbols_;
  std::optional<SymbolId> batch_symbol_;
};

}  // namespace memplan
