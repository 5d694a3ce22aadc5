#pragma once
// Which loss the training program appends to the model output: the one type the planner
// (analyzer/loss_spec.h), the runtime's loss kernels and the CLI share.

#include <cstdint>
#include <string_view>

#include "analyzer/vocabulary/name_table.h"

namespace memplan {

enum class LossKind : uint8_t {
  kAuto,          // a request only: cross entropy for [batch, classes] logits, mse otherwise
  kCrossEntropy,  // logits [N, C, d...] against class ids [N, d...] (-100 ignored)
  kMse,           // mean squared error against a target of the prediction's shape
  kSum,           // the sum of the output's elements; no label (a memory benchmark's loss)
};

inline constexpr NameTable<LossKind, 4> kLossKindNames = {{
    {LossKind::kAuto, "auto"},
    {LossKind::kCrossEntropy, "cross_entropy"},
    {LossKind::kMse, "mse"},
    {LossKind::kSum, "sum"},
}};

inline std::string_view LossKindName(LossKind kind) { return NameOf(kLossKindNames, kind); }
// "cross_entropy" -> kCrossEntropy; error "unknown loss 'x' (choose one of: auto, ...)".
inline Expected<LossKind> ParseLossKind(std::string_view text) {
  return ParseName(kLossKindNames, text, "loss");
}

}  // namespace memplan
