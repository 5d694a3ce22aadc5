#include "graph/exported_buffers.h"

#include <algorithm>
#include <vector>

#include "graph/onnx_metadata.h"
#include "graph/ops/op_registry.h"

namespace memplan {
namespace {

constexpr const char* kSignatureKind = "pkg.torch.export.graph_signature.InputSpec.kind";
// Names listed in a warning before "and N more".
constexpr size_t kNamesInWarning = 4;

template <class Visit>
void ForEachValueInfo(const onnx::GraphProto& graph, Visit visit) {
  for (const auto& vi : graph.input()) visit(vi);
  for (const auto& vi : graph.value_info()) visit(vi);
}

std::string NameList(const std::vector<std::string>& names) {
  std::string list;
  for (size_t i = 0; i < names.size() && i < kNamesInWarning; ++i)
    list += (i == 0 ? "" : ", ") + names[i];
  if (names.size() > kNamesInWarning)
    list += " and " + std::to_string(names.size() - kNamesInWarning) + " more";
  return list;
}

}  // namespace

ExportedBuffers ReadExportedBuffers(const onnx::GraphProto& graph) {
  ExportedBuffers exported;
  ForEachValueInfo(graph, [&](const onnx::ValueInfoProto& vi) {
    for (const auto& e : MetadataEntries(vi, kValueInfoMetadataField)) {
      if (e.key() != kSignatureKind) continue;
      exported.has_signature = true;
      if (e.value() == "BUFFER") exported.buffers.insert(vi.name());
    }
  });
  return exported;
}

void ApplyExportedBuffers(const ExportedBuffers& exported, Graph& graph) {
  if (exported.has_signature) {
    const std::set<std::string>& buffers = exported.buffers;
    std::vector<std::string> untrained;
    for (const Value& v : graph.values()) {
      if (v.kind != ValueKind::kParameter || !IsFloating(v.dtype) || !v.trainable) continue;
      if (buffers.count(v.name) == 0) continue;
      graph.mutable_value(v.id).trainable = false;
      untrained.push_back(v.name);
    }
    if (!untrained.empty())
      graph.warnings.push_back(std::to_string(untrained.size()) + " floating buffer" +
                               (untrained.size() == 1 ? "" : "s") + " (" + NameList(untrained) +
                               ") that a gradient could reach are not trained: the export's "
                               "graph signature records them as registered buffers");
    return;
  }
  // No signature: name the trainable tables (rank >= 2: a Linear's bias, added after its MatMul,
  // is rank 1) read only by Add / Sub.
  std::vector<std::string> additive;
  for (const Value& v : graph.values()) {
    if (v.kind != ValueKind::kParameter || !IsFloating(v.dtype) || !v.trainable) continue;
    if (!v.shape.known || v.shape.rank() < 2) continue;
    const auto& consumers = v.consumers;
    const bool only_added =
        !consumers.empty() && std::all_of(consumers.begin(), consumers.end(), [&](NodeId n) {
          const Node& node = graph.node(n);
          return OpRegistry::Get().FindOrUnknown(node.op_type, node.domain).adds_inputs;
        });
    if (only_added) additive.push_back(v.name);
  }
  if (!additive.empty())
    graph.warnings.push_back(
        std::to_string(additive.size()) + " initializer" + (additive.size() == 1 ? "" : "s") +
        " (" + NameList(additive) +
        ") reach the loss only through Add/Sub and are counted as trained parameters; this "
        "export has no graph signature to tell a registered buffer (a positional table) from a "
        "parameter: --freeze REGEX leaves buffers untrained, or export with dynamo=True");
}

}  // namespace memplan
