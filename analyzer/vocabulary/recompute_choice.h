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

enum class RecomputeChoice : uint8_t {
  kNone,     // keep every activation
  kAll,      // recompute every chain stage but the checkpoints at its ends
  kSqrt,     // sqrt(n) evenly spaced checkpoints (Chen et al. 2016)
  kOptimal,  // the chain DP under the memory budget
  kAuto,     // optimal when the budget or the global batch needs it, none otherwise
};

inline constexpr NameTable<RecomputeChoice, 5> kRecomputeChoiceNames = {{
    {RecomputeChoice::kNone, "none"},
    {RecomputeChoice::kAll, "all"},
    {RecomputeChoice::kSqrt, "sqrt"},
    {RecomputeChoice::kOptimal, "optimal"},
    {RecomputeChoice::kAuto, "auto"},
}};

inline std::string_view RecomputeChoiceName(RecomputeChoice choice) {
  return NameOf(kRecomputeChoiceNames, choice);
}
// "sqrt" -> kSqrt; error "unknown recompute 'x' (choose one of: none, all, sqrt, optimal, auto)".
inline Expected<RecomputeChoice> ParseRecomputeChoice(std::string_view text) {
  return ParseName(kRecomputeChoiceNames, text, "recompute");
}

enum class RecomputeLabel : uint8_t { kNone, kAll, kSqrt, kOptimal, kCustom };

inline constexpr NameTable<RecomputeLabel, 5> kRecomputeLabelNames = {{
    {RecomputeLabel::kNone, "none"},
    {RecomputeLabel::kAll, "all"},
    {RecomputeLabel::kSqrt, "sqrt"},
    {RecomputeLabel::kOptimal, "optimal"},
    {RecomputeLabel::kCustom, "custom"},
}};

inline std::string_view RecomputeLabelName(RecomputeLabel label) {
  return NameOf(kRecomputeLabelNames, label);
}
inline Expected<RecomputeLabel> ParseRecomputeLabel(std::string_view text) {
  return ParseName(kRecomputeLabelNames, text, "recompute label");
}

}  // namespace memplan
