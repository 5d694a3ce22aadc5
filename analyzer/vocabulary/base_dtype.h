#pragma once
// How a fine-tuning plan stores its frozen (base) weights: --base-dtype. Floating choices store
// every frozen parameter in that dtype; int8 (bitsandbytes LLM.int8 Int8Params) and nf4 (QLoRA's
// Params4bit) quantise the frozen 2-D MatMul/Gemm weights and dequantise each one per use as a
// transient (analyzer/program/frozen_weight_storage.h).

#include <cstdint>
#include <string_view>

#include "analyzer/vocabulary/name_table.h"

namespace memplan {

#define MEMPLAN_BASE_DTYPES(X) \
  X(kFp32, "fp32")             \
  X(kBf16, "bf16")             \
  X(kFp16, "fp16")             \
  X(kInt8, "int8")             \
  X(kNf4, "nf4")
MEMPLAN_VOCABULARY(BaseDType, MEMPLAN_BASE_DTYPES, "base dtype");

}  // namespace memplan
