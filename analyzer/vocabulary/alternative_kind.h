#pragma once
// What one alternative plan changes in the request when nothing fits (analyzer/alternatives/
// alternative_search.h): JSON `alternatives[].kinds`, one name per change (two for a pair).

#include <cstdint>
#include <string_view>

#include "analyzer/vocabulary/name_table.h"

namespace memplan {

enum class AlternativeKind : uint8_t {
  kRecompute,        // --recompute auto where none was asked
  kOptimizer,        // --optimizer adamw8bit | adafactor | lion in place of adam/adamw
  kLora,             // --lora r with a 16-bit frozen base (--base-dtype bf16 or fp16)
  kQlora,            // --lora r --base-dtype nf4
  kOffload,          // --offload optimizer, or optimizer+params (one GPU)
  kShorterSequence,  // --dim <sequence symbol>=<half, quarter, eighth>
  kSharding,         // --gpus N --parallel zero3
  kLargerGpu,        // --gpu <the smallest GPU of memplan's table that fits>
};

inline constexpr NameTable<AlternativeKind, 8> kAlternativeKindNames = {{
    {AlternativeKind::kRecompute, "recompute"},
    {AlternativeKind::kOptimizer, "optimizer"},
    {AlternativeKind::kLora, "lora"},
    {AlternativeKind::kQlora, "qlora"},
    {AlternativeKind::kOffload, "offload"},
    {AlternativeKind::kShorterSequence, "shorter_sequence"},
    {AlternativeKind::kSharding, "sharding"},
    {AlternativeKind::kLargerGpu, "gpu"},
}};

inline std::string_view AlternativeKindName(AlternativeKind kind) {
  return NameOf(kAlternativeKindNames, kind);
}
// "qlora" -> kQlora; error "unknown alternative 'x' (choose one of: recompute, ...)".
inline Expected<AlternativeKind> ParseAlternativeKind(std::string_view text) {
  return ParseName(kAlternativeKindNames, text, "alternative");
}

}  // namespace memplan
