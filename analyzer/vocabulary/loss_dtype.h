#pragma once
// The dtype the appended loss computes in (--loss-dtype): auto derives it from the graph and the
// precision regime (analyzer/precision/loss_precision.h); a dtype overrides that.

#include <cstdint>
#include <string_view>

#include "analyzer/vocabulary/name_table.h"

namespace memplan {

#define MEMPLAN_LOSS_DTYPES(X)                                                                 \
  /* the regime's: fp32 under autocast and master weights, the logits' dtype in pure half */   \
  /* training (a Cast to float before the loss in the graph makes that fp32) */                \
  X(kAuto, "auto")                                                                             \
  X(kFp32, "fp32") /* the logits are upcast for the loss: HF's logits.float(), torchtune's */  \
  X(kBf16, "bf16") /* F.cross_entropy on bf16 logits: log-probs and their gradients in bf16 */ \
  X(kFp16, "fp16")
// "fp32" -> kFp32; error "unknown loss dtype 'x' (choose one of: auto, fp32, bf16, fp16)".
MEMPLAN_VOCABULARY(LossDType, MEMPLAN_LOSS_DTYPES, "loss dtype");

}  // namespace memplan
