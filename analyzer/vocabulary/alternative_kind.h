#pragma once
// What one alternative plan changes in the request when nothing fits (analyzer/alternatives/
// alternative_search.h): JSON `alternatives[].kinds`, one name per change (two for a pair).

#include <cstdint>
#include <string_view>

#include "analyzer/vocabulary/name_table.h"

namespace memplan {

#define MEMPLAN_ALTERNATIVE_KINDS(X)                                                               \
  X(kRecompute, "recompute") /* --recompute auto where none was asked */                           \
  X(kOptimizer, "optimizer") /* --optimizer adamw8bit | adafactor | lion in place of adam/adamw */ \
  X(kLora, "lora")           /* --lora r with a 16-bit frozen base (--base-dtype bf16 or fp16) */  \
  X(kQlora, "qlora")         /* --lora r --base-dtype nf4 */                                       \
  X(kOffload, "offload")     /* --offload optimizer, or optimizer+params (one GPU) */              \
  /* --alloc-conf expandable_segments:True where the caching allocator ran with PyTorch's defaults \
   */                                                                                              \
  X(kAllocator, "allocator")                                                                       \
  /* --dim <sequence symbol>=<half, quarter, eighth> */                                            \
  X(kShorterSequence, "shorter_sequence")                                                          \
  /* --gpus N --parallel zero3 */                                                                  \
  X(kSharding, "sharding")                                                                         \
  /* --gpu <the smallest GPU of memplan's table that fits> */                                      \
  X(kLargerGpu, "gpu")                                                                             \
  /* `memplan explain` (SearchOomAlternatives): --micro-batch m/2, m/4, ... keeping the global */  \
  /* batch (more accumulation steps) */                                                            \
  X(kMicroBatch, "micro_batch")                                                                    \
  X(kPrecision, "precision")  /* --precision bf16 (fp16 without bf16) in place of fp32 */          \
  X(kFusedLoss, "fused_loss") /* --fused-loss (Liger's fused linear cross entropy) */
// "qlora" -> kQlora; error "unknown alternative 'x' (choose one of: recompute, ...)".
MEMPLAN_VOCABULARY(AlternativeKind, MEMPLAN_ALTERNATIVE_KINDS, "alternative");

}  // namespace memplan
