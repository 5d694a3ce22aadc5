#include "graph/tensor_data_check.h"

#include <cstdint>
#include <optional>
#include <string>

#include "graph/checked_math.h"
#include "graph/dtype.h"
#include "graph/external_data.h"

namespace memplan {
namespace {

using onnx::TensorProto;

// Bytes per element of the fixed-size ONNX types; nullopt for STRING and types this build does not
// size (their data is not checked, only their dims).
std::optional<int64_t> ElementBytes(int32_t type) {
  switch (type) {
    case TensorProto::BOOL:
    case TensorProto::INT8:
    case TensorProto::UINT8:
      return 1;
    case TensorProto::INT16:
    case TensorProto::UINT16:
    case TensorProto::FLOAT16:
    case TensorProto::BFLOAT16:
      return 2;
    case TensorProto::INT32:
    case TensorProto::UINT32:
    case TensorProto::FLOAT:
      return 4;
    case TensorProto::INT64:
    case TensorProto::UINT64:
    case TensorProto::DOUBLE:
    case TensorProto::COMPLEX64:
      return 8;
    case TensorProto::COMPLEX128:
      return 16;
    default:
      return std::nullopt;
  }
}

// How many entries of its typed field (onnx.proto) a tensor of `count` elements stores, and how
// many it does store; nullopt when no typed field applies.
struct TypedField {
  int64_t stored = 0;
  int64_t per_element = 1;
};
std::optional<TypedField> TypedFieldOf(const TensorProto& t) {
  switch (t.data_type()) {
    case TensorProto::FLOAT:
      return TypedField{t.float_data_size(), 1};
    case TensorProto::COMPLEX64:
      return TypedField{t.float_data_size(), 2};
    case TensorProto::DOUBLE:
      return TypedField{t.double_data_size(), 1};
    case TensorProto::COMPLEX128:
      return TypedField{t.double_data_size(), 2};
    case TensorProto::INT64:
      return TypedField{t.int64_data_size(), 1};
    case TensorProto::UINT32:
    case TensorProto::UINT64:
      return TypedField{t.uint64_data_size(), 1};
    case TensorProto::STRING:
      return TypedField{t.string_data_size(), 1};
    case TensorProto::BOOL:
    case TensorProto::INT8:
    case TensorProto::UINT8:
    case TensorProto::INT16:
    case TensorProto::UINT16:
    case TensorProto::INT32:
    case TensorProto::FLOAT16:
    case TensorProto::BFLOAT16:
      return TypedField{t.int32_data_size(), 1};
    default:
      return std::nullopt;
  }
}

// A non-negative decimal integer that fits int64 ("0", "4096"); nullopt otherwise.
std::optional<int64_t> ParseNonNegative(const std::string& text) {
  if (text.empty() || text.size() > 19) return std::nullopt;
  int64_t value = 0;
  for (char c : text) {
    if (c < '0' || c > '9') return std::nullopt;
    auto next = CheckedMul(value, 10);
    if (next) next = CheckedAdd(*next, c - '0');
    if (!next) return std::nullopt;
    value = *next;
  }
  return value;
}

Status ValidateExternal(const TensorProto& t, const std::string& what,
                        std::optional<int64_t> bytes) {
  bool has_location = false;
  std::optional<int64_t> offset = 0, length;
  for (const auto& entry : t.external_data()) {
    if (entry.key() == "location") {
      has_location = true;
      MEMPLAN_RETURN_IF_ERROR(ValidateExternalDataLocation(t.name(), entry.value()));
    } else if (entry.key() == "offset" || entry.key() == "length") {
      auto value = ParseNonNegative(entry.value());
      if (!value) {
        return MakeError(what + ": external data " + entry.key() + " '" + entry.value() +
                         "' is not a non-negative integer");
      }
      (entry.key() == "offset" ? offset : length) = value;
    }
  }
  if (!has_location) return MakeError(what + ": external data has no 'location' entry");
  if (length && !CheckedAdd(*offset, *length)) {
    return MakeError(what + ": external data offset + length overflows 64 bits");
  }
  if (length && bytes && *length != *bytes) {
    return MakeError(what + ": external data length " + std::to_string(*length) +
                     " differs from the " + std::to_string(*bytes) +
                     " bytes its dims and type need");
  }
  return OkStatus();
}

Status ValidateTensor(const TensorProto& t, const std::string& what) {
  // memplan's dtype table (graph/dtype.h) knows newer types (float8, int4) than libonnx 1.12 does.
  if (!DTypeFromOnnx(t.data_type())) {
    return MakeError(what + " has an undefined data type (" + std::to_string(t.data_type()) + ")");
  }
  int64_t count = 1;
  for (int64_t d : t.dims()) {
    if (d < 0) return MakeError(what + " has a negative dim " + std::to_string(d));
    auto next = CheckedMul(count, d);
    if (!next) return MakeError(what + ": its dims' element count overflows 64 bits");
    count = *next;
  }
  std::optional<int64_t> bytes;
  if (auto width = ElementBytes(t.data_type())) {
    bytes = CheckedMul(count, *width);
    if (!bytes) return MakeError(what + ": its byte size overflows 64 bits");
  }
  if (t.data_location() == TensorProto::EXTERNAL) return ValidateExternal(t, what, bytes);

  if (t.has_raw_data()) {
    if (bytes && static_cast<int64_t>(t.raw_data().size()) != *bytes) {
      return MakeError(what + " claims " + std::to_string(count) + " elements (" +
                       std::to_string(*bytes) + " bytes) but its raw_data holds " +
                       std::to_string(t.raw_data().size()) + " bytes");
    }
    return OkStatus();
  }
  auto field = TypedFieldOf(t);
  if (!field || field->stored == 0) return OkStatus();  // metadata only: no data stored
  auto expected = CheckedMul(count, field->per_element);
  if (!expected || field->stored != *expected) {
    return MakeError(what + " claims " + std::to_string(count) + " elements but stores " +
                     std::to_string(field->stored / field->per_element));
  }
  return OkStatus();
}

}  // namespace

Status ValidateStoredTensors(const onnx::GraphProto& graph) {
  for (const auto& t : graph.initializer()) {
    MEMPLAN_RETURN_IF_ERROR(ValidateTensor(t, "initializer '" + t.name() + "'"));
  }
  for (const auto& node : graph.node()) {
    for (const auto& a : node.attribute()) {
      const std::string what =
          "node '" + node.name() + "' (" + node.op_type() + ") attribute '" + a.name() + "'";
      if (a.has_t()) MEMPLAN_RETURN_IF_ERROR(ValidateTensor(a.t(), what));
      for (const auto& t : a.tensors()) MEMPLAN_RETURN_IF_ERROR(ValidateTensor(t, what));
    }
  }
  return OkStatus();
}

}  // namespace memplan
