#include "graph/onnx_graph_builder.h"

#include <onnx/defs/schema.h>

#include <optional>
#include <unordered_map>
#include <unordered_set>

#include "graph/onnx_convert.h"
#include "graph/ops/shape_ops_folding.h"
#include "graph/shape_propagation.h"

namespace memplan {
namespace {

std::string NodeLabel(const std::string& name, const std::string& op_type) {
  return "node '" + name + "' (" + op_type + ")";
}

bool IsSubgraphOp(const onnx::NodeProto& node) {
  if (node.domain().empty() || node.domain() == "ai.onnx") {
    const std::string& op = node.op_type();
    if (op == "If" || op == "Loop" || op == "Scan") return true;
  }
  for (const auto& a : node.attribute())
    if (a.type() == onnx::AttributeProto::GRAPH || a.type() == onnx::AttributeProto::GRAPHS)
      return true;
  return false;
}

// Names for unnamed nodes, "<OpType>_<n>" with n counting per op type, never clashing with a
// name in the file.
std::vector<std::string> NodeNames(const onnx::GraphProto& g) {
  std::unordered_set<std::string> taken;
  for (const auto& n : g.node())
    if (!n.name().empty()) taken.insert(n.name());
  std::unordered_map<std::string, int64_t> counters;
  std::vector<std::string> names;
  names.reserve(static_cast<size_t>(g.node_size()));
  for (const auto& n : g.node()) {
    if (!n.name().empty()) {
      names.push_back(n.name());
      continue;
    }
    std::string candidate;
    do {
      candidate = n.op_type() + "_" + std::to_string(counters[n.op_type()]++);
    } while (taken.count(candidate));
    taken.insert(candidate);
    names.push_back(candidate);
  }
  return names;
}

class Builder {
 public:
  Builder(const onnx::ModelProto& model, const ImportOptions& options)
      : model_(model), g_(model.graph()), options_(options) {}

  Expected<Graph> Build() {
    graph_.ir_version = model_.ir_version();
    for (const auto& opset : model_.opset_import()) {
      std::string domain = opset.domain() == "ai.onnx" ? "" : opset.domain();
      // Operator set versions start at 1: at 0 (or no version written) libonnx knows no op's
      // schema, so no arity check could run and every shape rule would trust the node as given.
      if (opset.version() < 1) {
        return MakeError("the model imports " + (domain.empty() ? "ai.onnx" : domain) + " opset " +
                         std::to_string(opset.version()) + "; operator set versions start at 1");
      }
      graph_.opset_imports[domain] = opset.version();
    }
    graph_.producer_name = model_.producer_name();
    graph_.graph_name = g_.name();
    // Every initializer, input and node output gets an id: one table size, no rehashing.
    size_t named = static_cast<size_t>(g_.initializer_size() + g_.input_size());
    for (const auto& n : g_.node()) named += static_cast<size_t>(n.output_size());
    ids_.reserve(named);
    names_ = NodeNames(g_);

    MEMPLAN_RETURN_IF_ERROR(CheckStructure());
    MEMPLAN_RETURN_IF_ERROR(AddInitializers());
    MEMPLAN_RETURN_IF_ERROR(AddInputs());
    MEMPLAN_RETURN_IF_ERROR(AddNodes());
    for (const auto& out : g_.output()) graph_.MarkOutput(ids_.at(out.name()));
    // A cycle is reported here, naming a node on it, before the checker's "not topologically
    // sorted" complaint could hide it.
    MEMPLAN_RETURN_IF_ERROR(graph_.TopologicalOrder());
    MEMPLAN_RETURN_IF_ERROR(ChooseBatchSymbol());
    return std::move(graph_);
  }

 private:
  // The registry's shape rules index a node's inputs by position, trusting ONNX's arity (Gather
  // has data and indices). Where libonnx has the op's schema at the model's opset, too few inputs
  // or outputs are an error here, whether or not the checker runs later.
  Status CheckArity(const onnx::NodeProto& n, const std::string& name) const {
    const std::string domain = n.domain() == "ai.onnx" ? "" : n.domain();
    auto opset = graph_.opset_imports.find(domain);
    if (opset == graph_.opset_imports.end()) return OkStatus();
    const onnx::OpSchema* schema =
        onnx::OpSchemaRegistry::Schema(n.op_type(), static_cast<int>(opset->second), domain);
    if (schema == nullptr) return OkStatus();
    if (n.input_size() < schema->min_input() || n.output_size() < schema->min_output()) {
      return MakeError(NodeLabel(name, n.op_type()) + ": has " + std::to_string(n.input_size()) +
                       " inputs and " + std::to_string(n.output_size()) + " outputs; ONNX needs " +
                       "at least " + std::to_string(schema->min_input()) + " and " +
                       std::to_string(schema->min_output()));
    }
    return OkStatus();
  }

  Status CheckStructure() {
    for (int i = 0; i < g_.node_size(); ++i) {
      const auto& n = g_.node(i);
      if (IsSubgraphOp(n)) {
        return MakeError(NodeLabel(names_[static_cast<size_t>(i)], n.op_type()) +
                         ": subgraph ops (If, Loop, Scan) are not supported");
      }
      MEMPLAN_RETURN_IF_ERROR(CheckArity(n, names_[static_cast<size_t>(i)]));
    }
    // Every name that something defines: initializers, graph inputs, node outputs (once each).
    std::unordered_set<std::string> defined;
    defined.reserve(static_cast<size_t>(g_.initializer_size() + g_.input_size()));
    for (const auto& t : g_.initializer()) defined.insert(t.name());
    for (const auto& in : g_.input()) defined.insert(in.name());
    std::unordered_set<std::string> produced;
    for (int i = 0; i < g_.node_size(); ++i) {
      for (const auto& out : g_.node(i).output()) {
        if (out.empty()) continue;
        if (!produced.insert(out).second || defined.count(out)) {
          return MakeError(NodeLabel(names_[static_cast<size_t>(i)], g_.node(i).op_type()) +
                           ": output '" + out + "' is already defined elsewhere in the graph");
        }
      }
    }
    defined.insert(produced.begin(), produced.end());
    for (int i = 0; i < g_.node_size(); ++i) {
      for (const auto& in : g_.node(i).input()) {
        if (!in.empty() && !defined.count(in)) {
          return MakeError(NodeLabel(names_[static_cast<size_t>(i)], g_.node(i).op_type()) +
                           ": input '" + in +
                           "' is not produced by any node, graph input or initializer");
        }
      }
    }
    for (const auto& out : g_.output()) {
      if (!defined.count(out.name())) {
        return MakeError("graph output '" + out.name() +
                         "' is not produced by any node, graph input or initializer");
      }
    }
    return OkStatus();
  }

  Status AddInitializers() {
    for (const auto& t : g_.initializer()) {
      const std::string what = "initializer '" + t.name() + "'";
      // Data type, data length and external-data entries were validated before the build
      // (graph/tensor_data_check.h).
      MEMPLAN_TRY(std::vector<int64_t> dims, TensorDims(t, what));
      Value v;
      v.name = t.name();
      v.dtype = DTypeFromOnnx(t.data_type()).value_or(DType::kUndefined);
      for (int64_t d : dims) v.shape.dims.emplace_back(d);
      v.shape.known = true;
      v.kind = IsFloating(v.dtype) ? ValueKind::kParameter : ValueKind::kConstant;
      if (auto ints = SmallIntegerValues(t, kMaxFoldedElements)) {
        v.contents = DimsOf(*ints);
      } else if (auto kept = SmallIntegerValues(t, kMaxKeptTensorElements)) {
        v.integer_data = std::move(*kept);
      } else if (auto reals = SmallFloatValues(t, kMaxFoldedElements)) {
        v.float_values = std::move(*reals);
      }
      MEMPLAN_RETURN_IF_ERROR(CheckValueSize(graph_, v));
      ids_[t.name()] = graph_.AddValue(std::move(v));
    }
    return OkStatus();
  }

  Status AddInputs() {
    for (const auto& in : g_.input()) {
      if (ids_.count(in.name())) continue;  // an initializer listed as an input (IR < 4 style)
      Value v;
      v.name = in.name();
      if (in.type().has_tensor_type()) {
        const auto& tt = in.type().tensor_type();
        v.dtype = DTypeFromOnnx(tt.elem_type()).value_or(DType::kUndefined);
        if (tt.has_shape()) {
          v.shape.known = true;
          for (int i = 0; i < tt.shape().dim_size(); ++i) {
            const auto& d = tt.shape().dim(i);
            if (d.has_dim_value() && d.dim_value() >= 0) {
              v.shape.dims.emplace_back(d.dim_value());
            } else if (d.has_dim_value() && d.dim_value() != -1) {
              return MakeError("input '" + in.name() + "' has a negative dim " +
                               std::to_string(d.dim_value()) + " at axis " + std::to_string(i));
            } else if (d.has_dim_param() && !d.dim_param().empty()) {
              v.shape.dims.push_back(Dim::Symbol(graph_.symbols().Intern(d.dim_param())));
            } else {
              v.shape.dims.push_back(Dim::Symbol(graph_.symbols().Fresh("unk")));
            }
          }
        }
      }
      MEMPLAN_RETURN_IF_ERROR(CheckValueSize(graph_, v));
      ValueId id = graph_.AddValue(std::move(v));
      graph_.MarkInput(id);
      ids_[in.name()] = id;
    }
    return OkStatus();
  }

  Status AddNodes() {
    // Output values first, so a node listed before its producer (an unsorted file) still links.
    for (const auto& n : g_.node()) {
      for (const auto& out : n.output()) {
        if (out.empty()) continue;
        Value v;
        v.name = out;
        ids_[out] = graph_.AddValue(std::move(v));
      }
    }
    for (int i = 0; i < g_.node_size(); ++i) {
      const auto& n = g_.node(i);
      Node node;
      node.name = names_[static_cast<size_t>(i)];
      node.op_type = n.op_type();
      node.domain = n.domain() == "ai.onnx" ? "" : n.domain();
      for (const auto& in : n.input()) node.inputs.push_back(in.empty() ? ValueId() : ids_.at(in));
      for (const auto& out : n.output())
        node.outputs.push_back(out.empty() ? ValueId() : ids_.at(out));
      MEMPLAN_TRY(node.attributes, ConvertAttributes(n, NodeLabel(node.name, node.op_type)));
      RecordConstantDropoutRatio(n, node);
      graph_.AddNode(std::move(node));
    }
    return OkStatus();
  }

  // Dropout's ratio moved from an attribute to input 1 at opset 12. A constant ratio is recorded
  // as the attribute, so the registry's rule reads one place whatever the opset (a ratio of 0 in
  // training mode is an identity that saves no mask).
  void RecordConstantDropoutRatio(const onnx::NodeProto& proto, Node& node) const {
    if (node.op_type != "Dropout" || !node.domain.empty() || proto.input_size() < 2 ||
        proto.input(1).empty() || node.attributes.Has("ratio"))
      return;
    if (auto ratio = ConstantFloatScalar(proto.input(1))) node.attributes.Set("ratio", *ratio);
  }

  // The value of a one-element floating initializer or Constant output; nullopt otherwise.
  std::optional<double> ConstantFloatScalar(const std::string& name) const {
    if (constant_tensors_.empty()) {  // indexed on first use: most models have no Dropout input
      for (const auto& t : g_.initializer()) constant_tensors_.emplace(t.name(), &t);
      for (const auto& n : g_.node()) {
        if (n.op_type() != "Constant" || n.output_size() != 1) continue;
        for (const auto& a : n.attribute())
          if (a.name() == "value" && a.type() == onnx::AttributeProto::TENSOR)
            constant_tensors_.emplace(n.output(0), &a.t());
      }
    }
    auto it = constant_tensors_.find(name);
    if (it == constant_tensors_.end()) return std::nullopt;
    auto values = SmallFloatValues(*it->second, /*max_elements=*/1);
    if (!values || values->size() != 1) return std::nullopt;
    return values->front();
  }

  Status ChooseBatchSymbol() {
    if (!options_.batch_symbol.empty()) {
      auto id = graph_.symbols().Find(options_.batch_symbol);
      if (!id) {
        return MakeError("batch symbol '" + options_.batch_symbol +
                         "' is not a dim of any graph input");
      }
      graph_.set_batch_symbol(*id);
      return OkStatus();
    }
    if (graph_.inputs().empty()) {
      graph_.warnings.push_back("the model has no graph inputs: the micro-batch cannot be varied");
      return OkStatus();
    }
    const Value& first = graph_.value(graph_.inputs().front());
    if (!first.shape.known || first.shape.rank() == 0) {
      graph_.warnings.push_back("input '" + first.name +
                                "' has no batch dim: the micro-batch cannot be varied");
    } else if (auto s = first.shape.dims[0].single_symbol()) {
      graph_.set_batch_symbol(*s);
    } else {
      graph_.warnings.push_back("input '" + first.name + "' has a fixed batch dim " +
                                first.shape.dims[0].ToString(graph_.symbols()) +
                                ": the micro-batch cannot be varied");
    }
    return OkStatus();
  }

  const onnx::ModelProto& model_;
  const onnx::GraphProto& g_;
  const ImportOptions& options_;
  Graph graph_;
  std::vector<std::string> names_;
  std::unordered_map<std::string, ValueId> ids_;
  mutable std::unordered_map<std::string, const onnx::TensorProto*> constant_tensors_;
};

}  // namespace

Expected<Graph> BuildGraphFromProto(const onnx::ModelProto& model, const ImportOptions& options) {
  return Builder(model, options).Build();
}

}  // namespace memplan
