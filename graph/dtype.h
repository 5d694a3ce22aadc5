#pragma once
// Tensor element types, with the byte sizes the simulator needs.

#include <cstdint>
#include <optional>
#include <string_view>

namespace memplan {

enum class DType : uint8_t {
  kUndefined,
  kFloat32,
  kFloat16,
  kBFloat16,
  kFloat64,
  kInt8,
  kUInt8,
  kInt16,
  kUInt16,
  kInt32,
  kUInt32,
  kInt64,
  kUInt64,
  kBool,
  kString,
  kComplex64,
  kComplex128,
};

// Bytes per element; 0 for kUndefined/kString (their size is not known statically).
int64_t ByteSize(DType dtype);
bool IsFloating(DType dtype);  // float16/bfloat16/float32/float64
std::string_view DTypeName(DType dtype);  // "float32", "float16", ...
std::optional<DType> DTypeFromName(std::string_view name);
// TensorProto.DataType (1 = FLOAT, 10 = FLOAT16, 16 = BFLOAT16, ...); nullopt for unknown codes.
std::optional<DType> DTypeFromOnnx(int32_t onnx_type);
int32_t DTypeToOnnx(DType dtype);

}  // namespace memplan
