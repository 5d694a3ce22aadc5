#pragma once
// Recompute (activation checkpointing) as a user asks for it and as a plan records it.
//
//   RecomputeChoice  the request to the search: none | all | sqrt | optimal | auto
//   RecomputeLabel   how a plan's recompute set was chosen: none | all | sqrt | optimal | custom
//                    (custom: a caller-given node set; auto never appears in a plan)

#include <cstdint>
#include <string_view>

#include "analyzer/vocabulary/name_table.h"

namespace memplan {

#define MEMPLAN_RECOMPUTE_CHOICES(X)                                                       \
  X(kNone, "none")       /* keep every activation */                                       \
  X(kAll, "all")         /* recompute every chain stage but the checkpoints at its ends */ \
  X(kSqrt, "sqrt")       /* sqrt(n) evenly spaced checkpoints (Chen et al. 2016) */        \
  X(kOptimal, "optimal") /* the chain DP under the memory budget */                        \
  X(kAuto, "auto")       /* optimal when the budget or the global batch needs it, none otherwise */
// "sqrt" -> kSqrt; error "unknown recompute 'x' (choose one of: none, all, sqrt, optimal, auto)".
MEMPLAN_VOCABULARY(RecomputeChoice, MEMPLAN_RECOMPUTE_CHOICES, "recompute");

#define MEMPLAN_RECOMPUTE_LABELS(X) \
  X(kNone, "none")                  \
  X(kAll, "all")                    \
  X(kSqrt, "sqrt")                  \
  X(kOptimal, "optimal")            \
  X(kCustom, "custom")
MEMPLAN_VOCABULARY(RecomputeLabel, MEMPLAN_RECOMPUTE_LABELS, "recompute label");

}  // namespace memplan
