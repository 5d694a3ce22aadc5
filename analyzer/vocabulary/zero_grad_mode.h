#pragma once
// How optimizer.zero_grad() clears the gradients between optimizer steps.

#include <cstdint>
#include <string_view>

#include "analyzer/vocabulary/name_table.h"

namespace memplan {

enum class ZeroGradMode : uint8_t {
  kSetToNone,  // zero_grad(set_to_none=True), PyTorch's default: gradients are freed
  kZero,       // zero_grad(set_to_none=False): gradients stay allocated and are zeroed
};

inline constexpr NameTable<ZeroGradMode, 2> kZeroGradModeNames = {{
    {ZeroGradMode::kSetToNone, "set_to_none"},
    {ZeroGradMode::kZero, "zero"},
}};

inline std::string_view ZeroGradModeName(ZeroGradMode mode) {
  return NameOf(kZeroGradModeNames, mode);
}
inline Expected<ZeroGradMode> ParseZeroGradMode(std::string_view text) {
  return ParseName(kZeroGradModeNames, text, "zero_grad mode");
}

}  // namespace memplan
