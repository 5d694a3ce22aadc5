#include "graph/onnx_metadata.h"

#include <google/protobuf/descriptor.h>
#include <google/protobuf/message.h>
#include <google/protobuf/unknown_field_set.h>

#include <utility>

namespace memplan {

std::vector<onnx::StringStringEntryProto> MetadataEntries(const google::protobuf::Message& message,
                                                          int field_number) {
  std::vector<onnx::StringStringEntryProto> entries;
  const auto* reflection = message.GetReflection();
  const auto* field = message.GetDescriptor()->FindFieldByNumber(field_number);
  if (field != nullptr && field->is_repeated() &&
      field->type() == google::protobuf::FieldDescriptor::TYPE_MESSAGE) {
    for (int i = 0; i < reflection->FieldSize(message, field); ++i) {
      onnx::StringStringEntryProto e;
      e.ParseFromString(reflection->GetRepeatedMessage(message, field, i).SerializeAsString());
      entries.push_back(std::move(e));
    }
    return entries;
  }
  const google::protobuf::UnknownFieldSet& unknown = reflection->GetUnknownFields(message);
  for (int i = 0; i < unknown.field_count(); ++i) {
    const auto& f = unknown.field(i);
    if (f.number() != field_number ||
        f.type() != google::protobuf::UnknownField::TYPE_LENGTH_DELIMITED)
      continue;
    onnx::StringStringEntryProto e;
    if (e.ParseFromString(f.length_delimited())) entries.push_back(std::move(e));
  }
  return entries;
}

std::optional<std::string> MetadataValue(const google::protobuf::Message& message, int field_number,
                                         std::string_view key) {
  for (const onnx::StringStringEntryProto& e : MetadataEntries(message, field_number))
    if (e.key() == key) return e.value();
  return std::nullopt;
}

}  // namespace memplan
