#pragma once
// How attention is planned (`--attention`): the kernel PyTorch would run for it.

#include <cstdint>
#include <string_view>

#include "analyzer/vocabulary/name_table.h"

namespace memplan {

#define MEMPLAN_ATTENTION_MODES(X)                                                         \
  /* the graph as exported: softmax output, dropout mask and S×S products are saved */    \
  X(kEager, "eager")                                                                       \
  /* every recognised attention as scaled_dot_product_attention's flash kernel; a model */ \
  /* with none is an error */                                                              \
  X(kSdpa, "sdpa")                                                                         \
  /* sdpa where attention is recognised (what PyTorch 2 and HF transformers run) */        \
  X(kAuto, "auto")
// "sdpa" -> kSdpa; error "unknown attention mode 'x' (choose one of: eager, sdpa, auto)".
MEMPLAN_VOCABULARY(AttentionMode, MEMPLAN_ATTENTION_MODES, "attention mode");

}  // namespace memplan
