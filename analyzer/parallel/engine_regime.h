#pragma once
// The regime the engine of a data-parallel strategy runs, whatever launches it: a ZeRO stage is
// DeepSpeed's engine (Trainer's deepspeed=, Accelerate's DEEPSPEED, Lightning's
// deepspeed_stage_N, the DeepSpeed launcher alike), whose bf16/fp16 optimizer keeps half
// parameters and gradients with fp32 master weights (--amp-mode master-weights) and whose Adam is
// FusedAdam (--optimizer-impl fused: no step intermediate). DDP and FSDP run the user's choice
// (torch.autocast on fp32 parameters by default). A plan for a strategy is made in its engine's
// regime unless --amp-mode / --optimizer-impl say otherwise, so "ZeRO-2, ZeRO-3 or FSDP?" is
// answered for what each engine runs.

#include <optional>

#include "analyzer/vocabulary/amp_mode.h"
#include "analyzer/vocabulary/optimizer_impl.h"
#include "analyzer/vocabulary/optimizer_kind.h"
#include "analyzer/vocabulary/parallel_strategy.h"

namespace memplan {

inline bool IsZeroStage(ParallelStrategy s) {
  return s == ParallelStrategy::kZero1 || s == ParallelStrategy::kZero2 ||
         s == ParallelStrategy::kZero3;
}

// The mixed-precision regime the strategy's engine runs, or nullopt where it runs any.
inline std::optional<AmpMode> EngineAmpMode(ParallelStrategy s) {
  if (IsZeroStage(s)) return AmpMode::kMasterWeights;
  return std::nullopt;
}

// The optimizer implementation the strategy's engine runs for `optimizer`, or nullopt where the
// script constructs the one the plan names.
inline std::optional<OptimizerImpl> EngineOptimizerImpl(ParallelStrategy s,
                                                        OptimizerKind optimizer) {
  const bool adam = optimizer == OptimizerKind::kAdam || optimizer == OptimizerKind::kAdamW;
  if (IsZeroStage(s) && adam) return OptimizerImpl::kFused;
  return std::nullopt;
}

// Which of the regime settings the user fixed (--amp-mode, --optimizer-impl): the engine's
// regime fills only the others.
struct RegimeChoice {
  bool amp_mode_given = false;
  bool optimizer_impl_given = false;
  // --engine-options auto_wrap_policy=...: an export target's FSDP wrapping default stays out.
  bool wrap_policy_given = false;
};

}  // namespace memplan
