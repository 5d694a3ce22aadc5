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
constexpr std::array<DTypeRow, 24> kRows = {{
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
    {DType::kFloat8E4M3FN, 17, 1, "float8e4m3fn"},
    {DType::kFloat8E4M3FNUZ, 18, 1, "float8e4m3fnuz"},
    {DType::kFloat8E5M2, 19, 1, "float8e5m2"},
    {DType::kFloat8E5M2FNUZ, 20, 1, "float8e5m2fnuz"},
    {DType::kUInt4, 21, 1, "uint4"},  // 4 bits: see IsPackedFourBit
    {DType::kInt4, 22, 1, "int4"},
    {DType::kFloat4E2M1, 23, 1, "float4e2m1"},
    {DType::kFloat8E8M0, 24, 1, "float8e8m0"},
}};

// ONNX stores these two elements to a byte (the first in the low nibble).
bool IsPackedFourBit(DType dtype) {
  return dtype == DType::kUInt4 || dtype == DType::kInt4 || dtype == DType::kFloat4E2M1;
}

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

int64_t BitSize(DType dtype) { return IsPackedFourBit(dtype) ? 4 : 8 * ByteSize(dtype); }

Dim TensorBytes(const Dim& elements, DType dtype) {
  if (!IsPackedFourBit(dtype)) return elements * Dim(ByteSize(dtype));
  if (auto n = elements.constant_value()) return Dim((*n / 2) + (*n % 2));
  if (auto half = elements.DivideExactly(Dim(2))) return *half;
  return elements;  // one byte per element: never under the packed size
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
