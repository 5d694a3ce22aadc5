#pragma once
// Which optimizer a training program steps with: the one type the planner, the runtime, the
// exports and the CLI share. Names are torch.optim's, lower case.

#include <cstdint>
#include <string_view>

#include "analyzer/vocabulary/name_table.h"

namespace memplan {

enum class OptimizerKind : uint8_t {
  kSgd,        // torch.optim.SGD without momentum: no state
  kMomentum,   // torch.optim.SGD(momentum=...): one momentum buffer per parameter
  kAdam,       // torch.optim.Adam: two moments per parameter
  kAdamW,      // torch.optim.AdamW: two moments, decoupled weight decay
  kAdafactor,  // transformers' Adafactor: factored row/column statistics (planned, not run)
  // bitsandbytes' AdamW8bit: both moments in 8 bits, one fp32 absmax per 2048-element block;
  // tensors under 4096 elements keep 32-bit moments (analyzer/optimizer_state.h).
  kAdamW8bit,
  // bitsandbytes' PagedAdamW8bit: AdamW8bit's state in CUDA unified (paged) memory.
  kPagedAdamW8bit,
  kLion,  // Lion (Chen et al. 2023, lion-pytorch / bitsandbytes Lion32bit): one fp32 moment
};

inline constexpr NameTable<OptimizerKind, 8> kOptimizerKindNames = {{
    {OptimizerKind::kSgd, "sgd"},
    {OptimizerKind::kMomentum, "momentum"},
    {OptimizerKind::kAdam, "adam"},
    {OptimizerKind::kAdamW, "adamw"},
    {OptimizerKind::kAdafactor, "adafactor"},
    {OptimizerKind::kAdamW8bit, "adamw8bit"},
    {OptimizerKind::kPagedAdamW8bit, "paged-adamw8bit"},
    {OptimizerKind::kLion, "lion"},
}};

inline std::string_view OptimizerKindName(OptimizerKind kind) {
  return NameOf(kOptimizerKindNames, kind);
}
// "adamw" -> kAdamW; error "unknown optimizer 'x' (choose one of: sgd, ...)".
inline Expected<OptimizerKind> ParseOptimizerKind(std::string_view text) {
  return ParseName(kOptimizerKindNames, text, "optimizer");
}

}  // namespace memplan
