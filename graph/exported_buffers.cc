#include "graph/exported_buffers.h"

#include <algorithm>
#include <sstream>
#include <utility>
#include <vector>

#include "graph/onnx_metadata.h"
#include "graph/ops/op_registry.h"
#include "graph/trig_frequency_tables.h"

namespace memplan {
namespace {

constexpr const char* kSignatureKind = "pkg.torch.export.graph_signature.InputSpec.kind";
// The exporter's optimizer (onnxscript) records on each initializer it computed the values it
// folded into it.
constexpr const char* kFoldedFrom = "pkg.onnxscript.optimizer.folded_from";
// The whole signature, on the graph: one line per input, "p_w: PARAMETER target='w'", also for
// the parameters the exporter's optimizer folded away (whose value_info is gone).
constexpr const char* kGraphSignature = "pkg.torch.export.ExportedProgram.graph_signature";
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

// The names in the optimizer's folded_from list, written as Python's repr of a list of strings:
// "['model.layers.0.q_proj.weight', 'val_3']".
std::vector<std::string> QuotedNames(const std::string& list) {
  std::vector<std::string> names;
  for (size_t open = list.find('\''); open != std::string::npos;) {
    const size_t close = list.find('\'', open + 1);
    if (close == std::string::npos) break;
    names.push_back(list.substr(open + 1, close - open - 1));
    open = list.find('\'', close + 1);
  }
  return names;
}

}  // namespace

ExportedBuffers ReadExportedBuffers(const onnx::GraphProto& graph) {
  ExportedBuffers exported;
  std::vector<std::pair<std::string, std::vector<std::string>>> folded;
  for (const auto& e : MetadataEntries(graph, kGraphMetadataField)) {
    if (e.key() != kGraphSignature) continue;
    std::istringstream lines(e.value());
    for (std::string line; std::getline(lines, line);) {
      for (const char* kind : {"PARAMETER", "BUFFER"}) {
        const std::string marker = std::string(": ") + kind + " target='";
        const size_t at = line.find(marker);
        if (at == std::string::npos) continue;
        const size_t begin = at + marker.size(), end = line.find('\'', begin);
        if (end == std::string::npos) continue;
        exported.has_signature = true;
        (kind[0] == 'P' ? exported.parameters : exported.buffers)
            .insert(line.substr(begin, end - begin));
      }
    }
  }
  ForEachValueInfo(graph, [&](const onnx::ValueInfoProto& vi) {
    for (const auto& e : MetadataEntries(vi, kValueInfoMetadataField)) {
      if (e.key() == kFoldedFrom) folded.emplace_back(vi.name(), QuotedNames(e.value()));
      if (e.key() != kSignatureKind) continue;
      exported.has_signature = true;
      if (e.value() == "BUFFER") exported.buffers.insert(vi.name());
      if (e.value() == "PARAMETER") exported.parameters.insert(vi.name());
    }
  });
  // A parameter the optimizer folded (Transpose(weight) stored transposed) is that parameter.
  std::set<std::string> from_parameters;
  for (const auto& [name, sources] : folded)
    for (const std::string& source : sources)
      if (exported.parameters.count(source) > 0) from_parameters.insert(name);
  exported.parameters.insert(from_parameters.begin(), from_parameters.end());
  return exported;
}

void ApplyExportedBuffers(const ExportedBuffers& exported, Graph& graph) {
  if (exported.has_signature) {
    const std::set<std::string>& buffers = exported.buffers;
    std::vector<std::string> untrained;
    for (const Value& v : graph.values()) {
      if (v.kind != ValueKind::kParameter || !IsFloating(v.dtype) || !v.trainable) continue;
      const bool buffer = buffers.count(v.name) > 0;
      if (!buffer && exported.parameters.count(v.name) > 0) continue;
      graph.mutable_value(v.id).trainable = false;
      if (buffer) untrained.push_back(v.name);
    }
    if (!untrained.empty())
      graph.warnings.push_back(std::to_string(untrained.size()) + " floating buffer" +
                               (untrained.size() == 1 ? "" : "s") + " (" + NameList(untrained) +
                               ") that a gradient could reach are not trained: the export's "
                               "graph signature records them as registered buffers");
    return;
  }
  // No signature: rotary and sinusoidal frequencies, read only as angles' Sin and Cos, are the
  // buffers they are in every library that has them (graph/trig_frequency_tables.h).
  if (const std::vector<std::string> frequencies = UntrainTrigFrequencyTables(graph);
      !frequencies.empty())
    graph.warnings.push_back(
        std::to_string(frequencies.size()) + " floating initializer" +
        (frequencies.size() == 1 ? "" : "s") + " (" + NameList(frequencies) +
        ") reach the loss only through Sin/Cos of constant positions times them, as a rotary or "
        "sinusoidal embedding's frequencies (inv_freq) do: not trained, as torch keeps them "
        "(registered buffers); this export has no graph signature to confirm it");
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
