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
};

inline constexpr NameTable<OptimizerKind, 5> kOptimizerKindNames = {{
    {OptimizerKind::kSgd, "sgd"},
    {OptimizerKind::kMomentum, "momentum"},
    {OptimizerKind::kAdam, "adam"},
    {OptimizerKind::kAdamW, "adamw"},
    {OptimizerKind::kAdafactor, "adafactor"},
}};

inline std::string_view OptimizerKindName(OptimizerKind kind) {
  return NameOf(kOptimizerKindNames, kind);
}
// "adamw" -> kAdamW; error "unknown optimizer 'x' (choose one of: sgd, ...)".
inline Expected<OptimizerKind> ParseOptimizerKind(std::string_view text) {
  return ParseName(kOptimizerKindNames, text, "optimizer");
}

}  // namespace memplan
