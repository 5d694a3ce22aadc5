#pragma once
// metadata_props of an ONNX message (IR 10 added them to ValueInfoProto, field 4, NodeProto, field
// 9, and GraphProto, field 16): torch.onnx.export(dynamo=True) records there what the torch.export
// graph knew (the graph signature, each node's module scopes). The libonnx of Debian 12 predates
// the fields, so they are read from the message's unknown fields when its descriptor does not know
// them.

#include <onnx/onnx_pb.h>

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace memplan {

inline constexpr int kValueInfoMetadataField = 4;  // ValueInfoProto.metadata_props
inline constexpr int kNodeMetadataField = 9;       // NodeProto.metadata_props
inline constexpr int kGraphMetadataField = 16;     // GraphProto.metadata_props

// Every metadata entry of `message` stored in field `field_number`, in file order.
std::vector<onnx::StringStringEntryProto> MetadataEntries(const google::protobuf::Message& message,
                                                          int field_number);

// The value of the first entry named `key`, or nullopt.
std::optional<std::string> MetadataValue(const google::protobuf::Message& message, int field_number,
                                         std::string_view key);

}  // namespace memplan
