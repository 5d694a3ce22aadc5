#pragma once
// The mixed-precision regime: where the parameters, their gradients and the optimizer state live
// and how the forward obtains half-precision weights. The facts each regime implies are stated
// once, in analyzer/precision/amp_regime.h.

#include <cstdint>
#include <string_view>

#include "analyzer/vocabulary/name_table.h"

namespace memplan {

#define MEMPLAN_AMP_MODES(X)                                                                     \
  /* torch.autocast + GradScaler (what the PyTorch loop, HF Trainer, Lightning and Accelerate */ \
  /* run): fp32 parameters and gradients, half casts made per op, weight casts cached through */ \
  /* forward. */                                                                                 \
  X(kAutocast, "autocast")                                                                       \
  /* DeepSpeed / Megatron / apex O2: half parameters and gradients plus an fp32 master copy. */  \
  X(kMasterWeights, "master-weights")                                                            \
  /* model.to(torch.bfloat16) (torchtune): bf16 parameters, gradients and optimizer state. */    \
  X(kPure, "pure")
// "pure" -> kPure; error "unknown AMP mode 'x' (choose one of: autocast, master-weights, pure)".
MEMPLAN_VOCABULARY(AmpMode, MEMPLAN_AMP_MODES, "AMP mode");

// The CLI's regime when --amp-mode is not given: what the HF Trainer, Accelerate, Lightning and
// PyTorch-loop exports run (analyze --export deepspeed plans master weights instead).
inline constexpr AmpMode kDefaultCliAmpMode = AmpMode::kAutocast;

}  // namespace memplan
