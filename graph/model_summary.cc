#include "graph/model_summary.h"

#include <algorithm>
#include <set>
#include <string_view>

#include "graph/checked_math.h"
#include "graph/ops/op_registry.h"

namespace memplan {
namespace {

bool IsDefaultDomain(const std::string& domain) { return domain.empty() || domain == "ai.onnx"; }

std::string OpKey(const Node& node) {
  return IsDefaultDomain(node.domain) ? node.op_type : node.domain + ":" + node.op_type;
}

TensorSummary SummarizeTensor(const Graph& graph, const Value& value, const Bindings& bindings) {
  TensorSummary t;
  t.name = value.name;
  t.dtype = std::string(DTypeName(value.dtype));
  t.shape_known = value.shape.known;
  if (!value.shape.known) return t;
  std::vector<int64_t> bound;
  bool all_bound = true;
  for (const Dim& dim : value.shape.dims) {
    t.dims.push_back(dim.ToString(graph.symbols()));
    Expected<int64_t> v = dim.Evaluate(bindings);
    if (v.ok()) {
      bound.push_back(*v);
    } else {
      all_bound = false;
    }
  }
  if (all_bound) t.bound_dims = std::move(bound);
  return t;
}

// BatchNormalization runs in training mode when training_mode=1 (opset 14+) or, before opset 14,
// when it has the optional running-statistics outputs.
bool BatchNormIsTraining(const Node& node) {
  if (node.attributes.GetInt("training_mode", 0) != 0) return true;
  int present_outputs = 0;
  for (ValueId out : node.outputs)
    if (out.valid()) ++present_outputs;
  return present_outputs > 1;
}

// torch.onnx names a tensor its constant folding made "onnx::<Op>_<n>" (module parameters keep
// their own names): a Conv weight and bias both named so were computed at export, which is what
// folding a BatchNorm into the Conv does.
bool IsFoldedConstantName(const std::string& name) {
  constexpr std::string_view kPrefix = "onnx::Conv_";
  if (name.size() <= kPrefix.size() || name.compare(0, kPrefix.size(), kPrefix) != 0) return false;
  return std::all_of(name.begin() + static_cast<std::ptrdiff_t>(kPrefix.size()), name.end(),
                     [](char c) { return c >= '0' && c <= '9'; });
}

bool HasFoldedWeightAndBias(const Graph& graph, const Node& conv) {
  if (conv.inputs.size() < 3) return false;
  for (size_t slot : {size_t{1}, size_t{2}}) {
    const ValueId id = conv.inputs[slot];
    if (!id.valid()) return false;
    const Value& v = graph.value(id);
    if (v.kind != ValueKind::kParameter || !IsFoldedConstantName(v.name)) return false;
  }
  return true;
}

void AddParameters(const Graph& graph, const Value& value, const Bindings& bindings,
                   ModelSummary& summary) {
  Expected<int64_t> elements = value.shape.NumElements().Evaluate(bindings);
  std::optional<int64_t> bytes;
  // TensorBytes packs 4-bit types two to a byte; an overflow leaves no constant value.
  if (elements.ok()) bytes = TensorBytes(Dim(*elements), value.dtype).constant_value();
  if (!value.shape.known || !elements.ok() || !bytes) {
    summary.warnings.push_back("parameter '" + value.name + "' has shape " +
                               value.shape.ToString(graph.symbols()) +
                               " whose size is not known; it is not counted");
    return;
  }
  // Buffers (floating initializers no gradient reaches, e.g. BatchNorm running statistics) are
  // counted apart so parameter_count matches what PyTorch's parameters() reports.
  auto add_checked = [](int64_t& acc, int64_t x) {
    std::optional<int64_t> sum = CheckedAdd(acc, x);
    MEMPLAN_CHECK(sum.has_value());
    acc = *sum;
  };
  if (!value.trainable) {
    add_checked(summary.buffer_count, *elements);
    add_checked(summary.buffer_bytes, *bytes);
    return;
  }
  DTypeTotals& totals = summary.parameters_by_dtype[std::string(DTypeName(value.dtype))];
  // Parameter totals stay far below 2^63 for any file that fits on disk; saturating would hide a
  // bug, so the checked sums treat an overflow as an invariant failure.
  auto add = [](int64_t& acc, int64_t x) {
    std::optional<int64_t> sum = CheckedAdd(acc, x);
    MEMPLAN_CHECK(sum.has_value());
    acc = *sum;
  };
  add(totals.count, *elements);
  add(totals.bytes, *bytes);
  add(summary.parameter_count, *elements);
  add(summary.parameter_bytes, *bytes);
}

void AddExportWarnings(const Graph& graph, const ModelSummary& summary,
                       std::vector<std::string>& warnings) {
  int64_t convs = 0;
  int64_t folded_convs = 0;
  int64_t batchnorms = 0;
  int64_t inference_batchnorms = 0;
  for (const Node& node : graph.nodes()) {
    if (!IsDefaultDomain(node.domain)) continue;
    if (node.op_type == "Conv") {
      ++convs;
      if (HasFoldedWeightAndBias(graph, node)) ++folded_convs;
    } else if (node.op_type == "BatchNormalization") {
      ++batchnorms;
      if (!BatchNormIsTraining(node)) ++inference_batchnorms;
    }
  }

  if (folded_convs > 0) {
    warnings.push_back(
        "this looks like an inference export: " + std::to_string(folded_convs) + " of " +
        std::to_string(convs) +
        " Conv nodes have a weight and bias computed at export (initializers named onnx::Conv_N), "
        "which is how torch.onnx folds BatchNorm into Conv in eval mode; training memory will be "
        "underestimated. Export with torch.onnx.export(..., "
        "training=torch.onnx.TrainingMode.TRAINING)");
  }
  if (inference_batchnorms > 0) {
    warnings.push_back(
        std::to_string(inference_batchnorms) + " of " + std::to_string(batchnorms) +
        " BatchNormalization nodes run in inference mode (training_mode=0): this looks like an "
        "inference export; the statistics they save for backward are not modelled as in "
        "training. Export with training=torch.onnx.TrainingMode.TRAINING");
  }
  if (summary.parameter_count == 0 && summary.node_count > 0) {
    warnings.push_back(
        "the model has no trainable parameters (no floating-point initializers); weights fed as "
        "graph inputs are not counted as parameters");
  }
}

}  // namespace

ModelSummary SummarizeModel(const Graph& graph, const Bindings& bindings) {
  ModelSummary summary;
  summary.graph_name = graph.graph_name;
  summary.producer_name = graph.producer_name;
  summary.ir_version = graph.ir_version;
  summary.opset_imports = graph.opset_imports;
  summary.node_count = static_cast<int64_t>(graph.num_nodes());
  summary.warnings = graph.warnings;

  const OpRegistry& registry = OpRegistry::Get();
  std::set<std::string> unknown;
  for (const Node& node : graph.nodes()) {
    ++summary.ops[OpKey(node)];
    if (registry.Find(node.op_type, node.domain) == nullptr) unknown.insert(OpKey(node));
  }
  summary.unknown_ops.assign(unknown.begin(), unknown.end());

  for (const Value& value : graph.values())
    if (value.kind == ValueKind::kParameter) AddParameters(graph, value, bindings, summary);

  for (ValueId id : graph.inputs()) {
    const Value& value = graph.value(id);
    // Old exports list initializers among the graph inputs; only per-step inputs are inputs.
    if (value.kind == ValueKind::kInput)
      summary.inputs.push_back(SummarizeTensor(graph, value, bindings));
  }
  for (ValueId id : graph.outputs())
    summary.outputs.push_back(SummarizeTensor(graph, graph.value(id), bindings));

  const SymbolTable& symbols = graph.symbols();
  for (size_t i = 0; i < symbols.size(); ++i) {
    SymbolId id = static_cast<SymbolId>(i);
    summary.symbols.push_back(
        SymbolSummary{symbols.Name(id), graph.batch_symbol() == id, bindings.Get(id)});
  }

  AddExportWarnings(graph, summary, summary.warnings);
  return summary;
}

}  // namespace memplan
