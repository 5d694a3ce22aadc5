#pragma once
// How a fine-tuning plan stores its frozen (base) weights: --base-dtype. Floating choices store
// every frozen parameter in that dtype; int8 (bitsandbytes LLM.int8 Int8Params) and nf4 (QLoRA's
// Params4bit) quantise the frozen 2-D MatMul/Gemm weights and dequantise each one per use as a
// transient (analyzer/frozen_weight_storage.h).

#include <cstdint>
#include <string_view>

#include "analyzer/vocabulary/name_table.h"

namespace memplan {

enum class BaseDType : uint8_t {
  kFp32,
  kBf16,
  kFp16,
  kInt8,
  kNf4,
};

inline constexpr NameTable<BaseDType, 5> kBaseDTypeNames = {{
    {BaseDType::kFp32, "fp32"},
    {BaseDType::kBf16, "bf16"},
    {BaseDType::kFp16, "fp16"},
    {BaseDType::kInt8, "int8"},
    {BaseDType::kNf4, "nf4"},
}};

inline std::string_view BaseDTypeName(BaseDType dtype) { return NameOf(kBaseDTypeNames, dtype); }
inline Expected<BaseDType> ParseBaseDType(std::string_view text) {
  return ParseName(kBaseDTypeNames, text, "base dtype");
}

}  // namespace memplan
