#include "graph/folded_batch_norm.h"

#include <optional>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <utility>
#include <vector>

#include "graph/onnx_metadata.h"
#include "graph/torch_scoped_names.h"

namespace memplan {
namespace {

int64_t IntAttribute(const onnx::NodeProto& node, const std::string& name, int64_t fallback) {
  for (const auto& a : node.attribute())
    if (a.name() == name && a.type() == onnx::AttributeProto::INT) return a.i();
  return fallback;
}

bool NamesFoldedBatchNorm(const onnx::NodeProto& node) {
  if (!node.domain().empty() && node.domain() != "ai.onnx") return false;
  if (node.op_type() != "Conv" && node.op_type() != "ConvTranspose" && node.op_type() != "Gemm")
    return false;
  const auto rules = MetadataValue(node, kNodeMetadataField, kRewriterRuleNameKey);
  return rules && rules->find("FuseBatchNormInto") != std::string::npos;
}

// The BatchNorm's channel count: the folded node's output features, read from its weight.
std::optional<int64_t> OutputChannels(const onnx::NodeProto& node, const onnx::TensorProto& w) {
  if (w.dims_size() < 2) return std::nullopt;
  if (node.op_type() == "Conv") return w.dims(0);
  if (node.op_type() == "ConvTranspose") return w.dims(1) * IntAttribute(node, "group", 1);
  return IntAttribute(node, "transB", 0) != 0 ? w.dims(0) : w.dims(1);  // Gemm
}

// The BatchNorm module's qualified path: the innermost scope the node ran in (its name_scopes
// end with the scopes' paths, then the FX node's own name).
std::optional<std::string> ModulePath(const onnx::NodeProto& node) {
  const auto text = MetadataValue(node, kNodeMetadataField, kTorchNameScopesKey);
  if (!text) return std::nullopt;
  const auto scopes = ParsePythonStringList(*text);
  if (!scopes || scopes->size() < 3 || (*scopes)[scopes->size() - 2].empty()) return std::nullopt;
  return (*scopes)[scopes->size() - 2];
}

onnx::TensorProto Filled(const std::string& name, int64_t channels, bool as_double, double value) {
  onnx::TensorProto t;
  t.set_name(name);
  t.add_dims(channels);
  if (as_double) {
    t.set_data_type(onnx::TensorProto::DOUBLE);
    for (int64_t i = 0; i < channels; ++i) t.add_double_data(value);
  } else {
    t.set_data_type(onnx::TensorProto::FLOAT);
    for (int64_t i = 0; i < channels; ++i) t.add_float_data(static_cast<float>(value));
  }
  return t;
}

// The targets of the graph signature's BUFFER_MUTATION outputs ("getitem_3: BUFFER_MUTATION
// target='1.running_mean'", one per line).
std::unordered_set<std::string> MutatedBuffers(const onnx::GraphProto& graph) {
  std::unordered_set<std::string> targets;
  const auto signature =
      MetadataValue(graph, kGraphMetadataField, "pkg.torch.export.ExportedProgram.graph_signature");
  if (!signature) return targets;
  const std::string marker = ": BUFFER_MUTATION target='";
  for (size_t at = signature->find(marker); at != std::string::npos;
       at = signature->find(marker, at + 1)) {
    const size_t begin = at + marker.size(), end = signature->find('\'', begin);
    if (end == std::string::npos) break;
    targets.insert(signature->substr(begin, end - begin));
  }
  return targets;
}

}  // namespace

int64_t MarkTrainingBatchNorms(onnx::GraphProto& graph) {
  const std::unordered_set<std::string> mutated = MutatedBuffers(graph);
  if (mutated.empty()) return 0;
  int64_t marked = 0;
  for (auto& node : *graph.mutable_node()) {
    if (node.op_type() != "BatchNormalization" ||
        (!node.domain().empty() && node.domain() != "ai.onnx") || node.input_size() < 4 ||
        mutated.count(node.input(3)) == 0)
      continue;
    onnx::AttributeProto* mode = nullptr;
    for (auto& a : *node.mutable_attribute())
      if (a.name() == "training_mode") mode = &a;
    if (mode != nullptr && mode->i() != 0) continue;
    if (mode == nullptr) {
      mode = node.add_attribute();
      mode->set_name("training_mode");
      mode->set_type(onnx::AttributeProto::INT);
    }
    mode->set_i(1);
    ++marked;
  }
  return marked;
}

int64_t RestoreFoldedBatchNorms(onnx::GraphProto& graph) {
  std::unordered_map<std::string, const onnx::TensorProto*> initializers;
  std::unordered_set<std::string> taken;
  for (const auto& t : graph.initializer()) {
    initializers.emplace(t.name(), &t);
    taken.insert(t.name());
  }
  for (const auto& vi : graph.input()) taken.insert(vi.name());
  for (const auto& n : graph.node())
    for (const auto& o : n.output()) taken.insert(o);

  std::vector<onnx::NodeProto> nodes;
  std::vector<onnx::TensorProto> added;
  int64_t restored = 0;
  for (const auto& node : graph.node()) {
    nodes.push_back(node);
    if (!NamesFoldedBatchNorm(node) || node.input_size() < 2 || node.output_size() != 1) continue;
    const auto weight = initializers.find(node.input(1));
    if (weight == initializers.end()) continue;
    const auto channels = OutputChannels(node, *weight->second);
    if (!channels || *channels <= 0) continue;
    const std::string& output = node.output(0);
    const std::string produced = output + "/before_batch_norm";
    // Named as the signature names the module's state where the scopes say which module it was.
    const auto path = ModulePath(node);
    std::string prefix = path ? *path + "." : output + "/batch_norm.";
    const char* kSlots[] = {"weight", "bias", "running_mean", "running_var"};
    auto free = [&](const std::string& p) {
      for (const char* slot : kSlots)
        if (taken.count(p + slot) > 0) return false;
      return true;
    };
    if (!free(prefix)) prefix = output + "/batch_norm.";
    if (!free(prefix) || taken.count(produced) > 0) continue;

    const bool as_double = weight->second->data_type() == onnx::TensorProto::DOUBLE;
    const double fill[] = {1.0, 0.0, 0.0, 1.0};
    onnx::NodeProto bn;
    bn.set_name(node.name() + "/BatchNormalization");
    bn.set_op_type("BatchNormalization");
    bn.add_input(produced);
    for (int slot = 0; slot < 4; ++slot) {
      added.push_back(Filled(prefix + kSlots[slot], *channels, as_double, fill[slot]));
      taken.insert(prefix + kSlots[slot]);
      bn.add_input(prefix + kSlots[slot]);
    }
    bn.add_output(output);
    // The step runs it in training mode (batch statistics), as the module did.
    auto* mode = bn.add_attribute();
    mode->set_name("training_mode");
    mode->set_type(onnx::AttributeProto::INT);
    mode->set_i(1);
    nodes.back().set_output(0, produced);
    taken.insert(produced);
    nodes.push_back(std::move(bn));
    ++restored;
  }
  if (restored == 0) return 0;
  graph.clear_node();
  for (auto& n : nodes) *graph.add_node() = std::move(n);
  for (auto& t : added) *graph.add_initializer() = std::move(t);
  return restored;
}

}  // namespace memplan
