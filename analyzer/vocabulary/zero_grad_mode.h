#pragma once
// How optimizer.zero_grad() clears the gradients between optimizer steps.

#include <cstdint>
#include <string_view>

#include "analyzer/vocabulary/name_table.h"

namespace memplan {

#define MEMPLAN_ZERO_GRAD_MODES(X)                                          \
  /* zero_grad(set_to_none=True), PyTorch's default: gradients are freed */ \
  X(kSetToNone, "set_to_none")                                              \
  X(kZero, "zero") /* zero_grad(set_to_none=False): gradients stay allocated and are zeroed */
MEMPLAN_VOCABULARY(ZeroGradMode, MEMPLAN_ZERO_GRAD_MODES, "zero_grad mode");

}  // namespace memplan
