#pragma once
// The training precision: the one type the planner, the search, the exports and the CLI share.
// A PrecisionChoice is a request that may leave the precision to the search (auto); its fixed
// names are Precision's.

#include <cstdint>
#include <optional>
#include <string_view>

#include "analyzer/vocabulary/name_table.h"

namespace memplan {

enum class Precision : uint8_t {
  kFp32,  // everything in fp32
  kFp16,  // mixed precision: fp16 compute where safe, fp32 masters, loss scaling by default
  kBf16,  // mixed precision: bf16 compute where safe, fp32 masters, no loss scaling by default
};

inline constexpr NameTable<Precision, 3> kPrecisionNames = {{
    {Precision::kFp32, "fp32"},
    {Precision::kFp16, "fp16"},
    {Precision::kBf16, "bf16"},
}};

inline std::string_view PrecisionName(Precision precision) {
  return NameOf(kPrecisionNames, precision);
}
// "fp16" -> kFp16; error "unknown precision 'x' (choose one of: fp32, fp16, bf16)".
inline Expected<Precision> ParsePrecision(std::string_view text) {
  return ParseName(kPrecisionNames, text, "precision");
}

// What a user asks the search for: one precision, or auto (fp32 and the GPU's fastest 16-bit
// format, whichever plans faster).
enum class PrecisionChoice : uint8_t { kFp32, kFp16, kBf16, kAuto };

inline constexpr NameTable<PrecisionChoice, 4> kPrecisionChoiceNames = {{
    {PrecisionChoice::kFp32, kPrecisionNames[0].name},
    {PrecisionChoice::kFp16, kPrecisionNames[1].name},
    {PrecisionChoice::kBf16, kPrecisionNames[2].name},
    {PrecisionChoice::kAuto, "auto"},
}};

inline std::string_view PrecisionChoiceName(PrecisionChoice choice) {
  return NameOf(kPrecisionChoiceNames, choice);
}
// "auto" -> kAuto; error "unknown precision 'x' (choose one of: fp32, fp16, bf16, auto)".
inline Expected<PrecisionChoice> ParsePrecisionChoice(std::string_view text) {
  return ParseName(kPrecisionChoiceNames, text, "precision");
}

// The precision a choice fixes; nullopt for auto.
inline std::optional<Precision> FixedPrecision(PrecisionChoice choice) {
  switch (choice) {
    case PrecisionChoice::kFp32:
      return Precision::kFp32;
    case PrecisionChoice::kFp16:
      return Precision::kFp16;
    case PrecisionChoice::kBf16:
      return Precision::kBf16;
    case PrecisionChoice::kAuto:
      break;
  }
  return std::nullopt;
}

}  // namespace memplan
