#pragma once
// How attention is planned (`--attention`): the kernel PyTorch would run for it.

#include <cstdint>
#include <string_view>

#include "analyzer/vocabulary/name_table.h"

namespace memplan {

enum class AttentionMode : uint8_t {
  kEager,  // the graph as exported: softmax output, dropout mask and S×S products are saved
  kSdpa,   // every recognised attention as scaled_dot_product_attention's flash kernel; a model
           // with none is an error
  kAuto,   // sdpa where attention is recognised (what PyTorch 2 and HF transformers run)
};

inline constexpr NameTable<AttentionMode, 3> kAttentionModeNames = {{
    {AttentionMode::kEager, "eager"},
    {AttentionMode::kSdpa, "sdpa"},
    {AttentionMode::kAuto, "auto"},
}};

inline std::string_view AttentionModeName(AttentionMode mode) {
  return NameOf(kAttentionModeNames, mode);
}
// "sdpa" -> kSdpa; error "unknown attention mode 'x' (choose one of: eager, sdpa, auto)".
inline Expected<AttentionMode> ParseAttentionMode(std::string_view text) {
  return ParseName(kAttentionModeNames, text, "attention mode");
}

}  // namespace memplan
