#pragma once
// Tensor element types, with the byte sizes the simulator needs.

#include <cstdint>
#include <optional>
#include <string_view>

// nvcc compiles the CUDA kernels as C++17 (CMake 3.25 has no CUDA20 flag for it), and dim.h
// needs C++20; the kernels never call TensorBytes, so they see only the declaration.
#ifdef __CUDACC__
namespace memplan {
class Dim;
}
#else
#include "graph/dim.h"
#endif

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
  // Added to ONNX after libonnx 1.12 (whose generated proto lacks their enum values, so they are
  // read from the raw int32 field): the float8 family (opset 19), 4-bit ints (opset 21), float4
  // (opset 23) and the e8m0 scale type (opset 24).
  kFloat8E4M3FN,
  kFloat8E4M3FNUZ,
  kFloat8E5M2,
  kFloat8E5M2FNUZ,
  kUInt4,
  kInt4,
  kFloat4E2M1,
  kFloat8E8M0,
};

// Bytes per element, rounded up to a whole byte for the packed 4-bit types (use TensorBytes for
// their true size); 0 for kUndefined/kString (their size is not known statically).
int64_t ByteSize(DType dtype);
// Bits per element: 4 for int4/uint4/float4e2m1, 8 * ByteSize otherwise.
int64_t BitSize(DType dtype);
// The storage bytes of `elements` elements: ONNX packs 4-bit types two to a byte, rounding up.
// Symbolic counts are exact when the packing divides them (2*batch int4 elements = batch bytes);
// otherwise the rounded-up per-element size is the conservative answer.
Dim TensorBytes(const Dim& elements, DType dtype);
bool IsFloating(DType dtype);             // float16/bfloat16/float32/float64
std::string_view DTypeName(DType dtype);  // "float32", "float16", ...
std::optional<DType> DTypeFromName(std::string_view name);
// TensorProto.DataType (1 = FLOAT, 10 = FLOAT16, 16 = BFLOAT16, ...); nullopt for unknown codes.
std::optional<DType> DTypeFromOnnx(int32_t onnx_type);
int32_t DTypeToOnnx(DType dtype);

}  // namespace memplan
