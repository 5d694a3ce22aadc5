#include "graph/exported_buffers.h"

#include <google/protobuf/descriptor.h>
#include <google/protobuf/message.h>
#include <google/protobuf/unknown_field_set.h>

#include <algorithm>
#include <vector>

#include "graph/ops/op_registry.h"

namespace memplan {
namespace {

constexpr const char* kSignatureKind = "pkg.torch.export.graph_signature.InputSpec.kind";
constexpr int kValueInfoMetadataField = 4;  // ValueInfoProto.metadata_props (IR 10)
// Names listed in a warning before "and N more".
constexpr size_t kNamesInWarning = 4;

// The metadata entries of one value_info, whether this protobuf knows the field or not.
std::vector<onnx::StringStringEntryProto> MetadataOf(const onnx::ValueInfoProto& vi) {
  std::vector<onnx::StringStringEntryProto> entries;
  const auto* field = vi.GetDescriptor()->FindFieldByNumber(kValueInfoMetadataField);
  if (field != nullptr && field->is_repeated() &&
      field->type() == google::protobuf::FieldDescriptor::TYPE_MESSAGE) {
    const auto* reflection = vi.GetReflection();
    for (int i = 0; i < reflection->FieldSize(vi, field); ++i) {
      onnx::StringStringEntryProto e;
      e.ParseFromString(reflection->GetRepeatedMessage(vi, field, i).SerializeAsString());
      entries.push_back(std::move(e));
    }
    return entries;
  }
  const google::protobuf::UnknownFieldSet& unknown = vi.GetReflection()->GetUnknownFields(vi);
  for (int i = 0; i < unknown.field_count(); ++i) {
    const auto& f = unknown.field(i);
    if (f.number() != kValueInfoMetadataField ||
        f.type() != google::protobuf::UnknownField::TYPE_LENGTH_DELIMITED)
      continue;
    onnx::StringStringEntryProto e;
    if (e.ParseFromString(f.length_delimited())) entries.push_back(std::move(e));
  }
  return entries;
}

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
    for (const auto& e : MetadataOf(vi)) {
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
