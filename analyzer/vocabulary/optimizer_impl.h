#pragma once
// Which implementation of a torch.optim optimizer's step runs (the `foreach` / `fused` arguments
// of torch.optim.Adam, AdamW and SGD), and so which intermediates optimizer.step() allocates and
// frees. The bytes each implementation adds are stated once, in
// analyzer/program/optimizer_transient.h.

#include <cstdint>
#include <string>
#include <string_view>

#include "analyzer/vocabulary/name_table.h"
#include "analyzer/vocabulary/optimizer_kind.h"

namespace memplan {

#define MEMPLAN_OPTIMIZER_IMPLS(X)                                                                \
  /* foreach=True (`_multi_tensor_adam`): PyTorch's default on CUDA when neither foreach nor */   \
  /* fused is given. Adam's sqrt of the second moment is one tensor list for every parameter */   \
  /* at once. */                                                                                  \
  X(kForeach, "foreach")                                                                          \
  /* fused=True (`_fused_adam`, one kernel per parameter group): no intermediate tensor. Also */  \
  /* DeepSpeed's FusedAdam and bitsandbytes' 8-bit kernels. */                                    \
  X(kFused, "fused")                                                                              \
  /* foreach=False (`_single_tensor_adam`): a Python loop over the parameters, one parameter's */ \
  /* intermediates at a time. */                                                                  \
  X(kForLoop, "for-loop")
// "fused" -> kFused; error "unknown optimizer implementation 'x' (choose one of: ...)".
MEMPLAN_VOCABULARY(OptimizerImpl, MEMPLAN_OPTIMIZER_IMPLS, "optimizer implementation");

// The CLI's implementation when --optimizer-impl is not given: torch.optim's default on CUDA
// (torch/optim/optimizer.py `_default_to_fused_or_foreach`: foreach when every parameter is a
// CUDA tensor). `analyze --export deepspeed` plans DeepSpeed's FusedAdam instead (fused).
// The library's ProgramOptions default is kFused (no intermediate), the model its tests were
// derived with, as with kDefaultCliAmpMode.
inline constexpr OptimizerImpl kDefaultCliOptimizerImpl = OptimizerImpl::kForeach;

// Whether `optimizer` is a torch.optim class with foreach / fused / for-loop implementations
// (SGD, SGD with momentum, Adam, AdamW). The others run their own kernels, whatever the flag:
// bitsandbytes' 8-bit optimizers are fused CUDA kernels; Adafactor and Lion are planned without
// step intermediates.
inline bool HasTorchOptimizerImpls(OptimizerKind optimizer) {
  return optimizer == OptimizerKind::kSgd || optimizer == OptimizerKind::kMomentum ||
         optimizer == OptimizerKind::kAdam || optimizer == OptimizerKind::kAdamW;
}

// How reports name the optimizer: "adam (foreach)" for torch.optim's classes, the bare name for
// the others (their kernels are their own).
inline std::string OptimizerLabel(OptimizerKind optimizer, OptimizerImpl impl) {
  std::string label(OptimizerKindName(optimizer));
  if (HasTorchOptimizerImpls(optimizer)) label += " (" + std::string(OptimizerImplName(impl)) + ")";
  return label;
}

}  // namespace memplan
