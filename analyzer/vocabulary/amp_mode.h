#pragma once
// The mixed-precision regime: where the parameters, their gradients and the optimizer state live
// and how the forward obtains half-precision weights. The facts each regime implies are stated
// once, in analyzer/precision/amp_regime.h.

#include <cstdint>
#include <string_view>

#include "analyzer/vocabulary/name_table.h"

namespace memplan {

enum class AmpMode : uint8_t {
  // torch.autocast + GradScaler (what the PyTorch loop, HF Trainer, Lightning and Accelerate run):
  // fp32 parameters and gradients, half casts made per op, weight casts cached through forward.
  kAutocast,
  // DeepSpeed / Megatron / apex O2: half parameters and gradients plus an fp32 master copy.
  kMasterWeights,
  // model.to(torch.bfloat16) (torchtune): bf16 parameters, gradients and optimizer state.
  kPure,
};

inline constexpr NameTable<AmpMode, 3> kAmpModeNames = {{
    {AmpMode::kAutocast, "autocast"},
    {AmpMode::kMasterWeights, "master-weights"},
    {AmpMode::kPure, "pure"},
}};

// The CLI's regime when --amp-mode is not given: what the HF Trainer, Accelerate, Lightning and
// PyTorch-loop exports run (analyze --export deepspeed plans master weights instead).
inline constexpr AmpMode kDefaultCliAmpMode = AmpMode::kAutocast;

inline std::string_view AmpModeName(AmpMode mode) { return NameOf(kAmpModeNames, mode); }
// "pure" -> kPure; error "unknown AMP mode 'x' (choose one of: autocast, master-weights, pure)".
inline Expected<AmpMode> ParseAmpMode(std::string_view text) {
  return ParseName(kAmpModeNames, text, "AMP mode");
}

}  // namespace memplan
