#pragma once
// What a buffer is for: the breakdown every report and the CI baseline use.

#include <array>
#include <cstdint>
#include <string_view>

#include "analyzer/vocabulary/name_table.h"

namespace memplan {

#define MEMPLAN_MEMORY_CATEGORIES(X)                                                           \
  X(kParameters, "parameters") /* weights (fp32 masters and fp16/bf16 working copies) */       \
  /* parameter gradients, persistent across the k micro-batches */                             \
  X(kGradients, "gradients")                                                                   \
  X(kOptimizerState, "optimizer_state") /* momentum, Adam moments */                           \
  X(kActivations, "activations")        /* forward values held for backward (saved tensors) */ \
  /* values alive only briefly: forward temporaries, activation gradients */                   \
  X(kTransients, "transients")                                                                 \
  X(kWorkspace, "workspace") /* kernel scratch (conv workspace, reductions) */                 \
  X(kOther, "other")         /* inputs, labels, loss-scaler state */
// MemoryCategoryName is the JSON key of each category ("parameters", "optimizer_state", ...).
MEMPLAN_NAMED_ENUM(MemoryCategory, MEMPLAN_MEMORY_CATEGORIES);

inline constexpr size_t kNumMemoryCategories = kMemoryCategoryNames.size();

inline constexpr std::array<MemoryCategory, kNumMemoryCategories> kAllMemoryCategories =
    ValuesOf(kMemoryCategoryNames);

// Bytes per category, indexed by MemoryCategory.
struct CategoryBytes {
  std::array<int64_t, kNumMemoryCategories> bytes{};
  int64_t& operator[](MemoryCategory c) { return bytes[static_cast<size_t>(c)]; }
  int64_t operator[](MemoryCategory c) const { return bytes[static_cast<size_t>(c)]; }
  int64_t Total() const {
    int64_t t = 0;
    for (int64_t b : bytes) t += b;
    return t;
  }
};

}  // namespace memplan
