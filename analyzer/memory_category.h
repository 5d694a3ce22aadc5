#pragma once
// What a buffer is for: the breakdown every report and the CI baseline use.

#include <array>
#include <cstdint>
#include <string_view>

namespace memplan {

enum class MemoryCategory : uint8_t {
  kParameters,      // weights (fp32 masters and fp16/bf16 working copies)
  kGradients,       // parameter gradients, persistent across the k micro-batches
  kOptimizerState,  // momentum, Adam moments
  kActivations,     // forward values held for backward (saved tensors)
  kTransients,      // values alive only briefly: forward temporaries, activation gradients
  kWorkspace,       // kernel scratch (conv workspace, reductions)
  kOther,           // inputs, labels, loss-scaler state
};

inline constexpr size_t kNumMemoryCategories = 7;

inline constexpr std::array<MemoryCategory, kNumMemoryCategories> kAllMemoryCategories = {
    MemoryCategory::kParameters,  MemoryCategory::kGradients,  MemoryCategory::kOptimizerState,
    MemoryCategory::kActivations, MemoryCategory::kTransients, MemoryCategory::kWorkspace,
    MemoryCategory::kOther};

// The JSON key of each category ("parameters", "optimizer_state", ...).
std::string_view MemoryCategoryName(MemoryCategory category);

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
