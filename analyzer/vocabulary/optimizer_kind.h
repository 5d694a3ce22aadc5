#pragma once
// Which optimizer a training program steps with: the one type the planner, the runtime, the
// exports and the CLI share. Names are torch.optim's, lower case.

#include <cstdint>
#include <string_view>

#include "analyzer/vocabulary/name_table.h"

namespace memplan {

#define MEMPLAN_OPTIMIZER_KINDS(X)                                                               \
  X(kSgd, "sgd") /* torch.optim.SGD without momentum: no state */                                \
  /* torch.optim.SGD(momentum=...): one momentum buffer per parameter */                         \
  X(kMomentum, "momentum")                                                                       \
  X(kAdam, "adam")           /* torch.optim.Adam: two moments per parameter */                   \
  X(kAdamW, "adamw")         /* torch.optim.AdamW: two moments, decoupled weight decay */        \
  X(kAdafactor, "adafactor") /* transformers' Adafactor: factored row/column statistics */       \
                             /* (planned, not run) */                                            \
  /* bitsandbytes' AdamW8bit: both moments in 8 bits, one fp32 absmax per 2048-element block; */ \
  /* tensors under 4096 elements keep 32-bit moments (analyzer/program/optimizer_state.h). */    \
  X(kAdamW8bit, "adamw8bit")                                                                     \
  /* bitsandbytes' PagedAdamW8bit: AdamW8bit's state in CUDA unified (paged) memory. */          \
  X(kPagedAdamW8bit, "paged-adamw8bit")                                                          \
  /* Lion (Chen et al. 2023, lion-pytorch / bitsandbytes Lion32bit): one fp32 moment */          \
  X(kLion, "lion")
// "adamw" -> kAdamW; error "unknown optimizer 'x' (choose one of: sgd, ...)".
MEMPLAN_VOCABULARY(OptimizerKind, MEMPLAN_OPTIMIZER_KINDS, "optimizer");

}  // namespace memplan
