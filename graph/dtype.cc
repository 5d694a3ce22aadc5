#include "graph/dtype.h"

#include <array>
#include <utility>

namespace memplan {
namespace {

struct DTypeRow {
  DType dtype;
  int32_t onnx;
  int64_t bytes;
  std::string_view name;
};

// ONNX TensorProto.DataType codes from onnx.proto.
constexpr std::array<DTypeRow, 16> kRows = {{
    {DType::kFloat32, 1, 4, "float32"},
    {DType::kUInt8, 2, 1, "uint8"},
    {DType::kInt8, 3, 1, "int8"},
    {DType::kUInt16, 4, 2, "uint16"},
    {DType::kInt16, 5, 2, "int16"},
    {DType::kInt32, 6, 4, "int32"},
    {DType::kInt64, 7, 8, "int64"},
    {DType::kString, 8, 0, "string"},
    {DType::kBool, 9, 1, "bool"},
    {DType::kFloat16, 10, 2, "float16"},
    {DType::kFloat64, 11, 8, "float64"},
    {DType::kUInt32, 12, 4, "uint32"},
    {DType::kUInt64, 13, 8, "uint64"},
    {DType::kComplex64, 14, 8, "complex64"},
    {DType::kComplex128, 15, 16, "complex128"},
    {DType::kBFloat16, 16, 2, "bfloat16"},
}};

const DTypeRow* Find(DType dtype) {
  for (const auto& row : kRows)
    if (row.dtype == dtype) return &row;
  return nullptr;
}

}  // namespace

int64_t ByteSize(DType dtype) {
  const DTypeRow* row = Find(dtype);
  return row ? row->bytes : 0;
}

bool IsFloating(DType dtype) {
  return dtype == DType::kFloat32 || dtype == DType::kFloat16 || dtype == DType::kBFloat16 ||
         dtype == DType::kFloat64;
}

std::string_view DTypeName(DType dtype) {
  const DTypeRow* row = Find(dtype);
  return row ? row->name : "undefined";
}

std::optional<DType> DTypeFromName(std::string_view name) {
  for (const auto& row : kRows)
    if (row.name == name) return row.dtype;
  return std::nullopt;
}

std::optional<DType> DTypeFromOnnx(int32_t onnx_type) {
  for (const auto& row : kRows)
    if (row.onnx == onnx_type) return row.dtype;
  return std::nullopt;
}

int32_t DTypeToOnnx(DType dtype) {
  const DTypeRow* row = Find(dtype);
  return row ? row->onnx : 0;
}

}  // namespace memplan
