#pragma once
// The mechanism every vocabulary header shares: an enum's names as one table, and the parse that
// reads them back. A header declares its table once; the name, the parse and the list of choices
// in error messages all come from it, so they cannot drift apart.
//
//   inline constexpr NameTable<Precision, 3> kPrecisionNames = {{
//       {Precision::kFp32, "fp32"}, {Precision::kFp16, "fp16"}, {Precision::kBf16, "bf16"}}};
//   NameOf(kPrecisionNames, Precision::kFp16)        -> "fp16"
//   ParseName(kPrecisionNames, "fp8", "precision")   -> error "unknown precision 'fp8' (choose
//                                                       one of: fp32, fp16, bf16)"
//
// Error messages name the concept, never a command-line flag: the CLI adds its flag names.

#include <array>
#include <cstddef>
#include <string>
#include <string_view>

#include "graph/expected.h"

namespace memplan {

template <class Enum>
struct NamedValue {
  Enum value;
  std::string_view name;
};

template <class Enum, size_t N>
using NameTable = std::array<NamedValue<Enum>, N>;

// The name of `value`. REQUIRES: `table` lists every enumerator (the vocabulary tests check it).
template <class Enum, size_t N>
std::string_view NameOf(const NameTable<Enum, N>& table, Enum value) {
  for (const NamedValue<Enum>& entry : table)
    if (entry.value == value) return entry.name;
  MEMPLAN_CHECK(false && "an enumerator is missing from its name table");
  return {};
}

// The names in table order joined by `separator`, and the last one by `last_separator`:
// JoinNames(t, ", ", " or ") -> "fp32, fp16 or bf16".
template <class Enum, size_t N>
std::string JoinNames(const NameTable<Enum, N>& table, std::string_view separator = ", ",
                      std::string_view last_separator = ", ") {
  std::string joined;
  for (size_t i = 0; i < N; ++i) {
    if (i > 0) joined += (i + 1 == N ? last_separator : separator);
    joined += table[i].name;
  }
  return joined;
}

// The enumerator named `text` (exact, case-sensitive). The error names `what` and the choices:
// "unknown optimizer 'adamax' (choose one of: sgd, momentum, adam, adamw, adafactor)".
template <class Enum, size_t N>
Expected<Enum> ParseName(const NameTable<Enum, N>& table, std::string_view text,
                         std::string_view what) {
  for (const NamedValue<Enum>& entry : table)
    if (entry.name == text) return entry.value;
  return MakeError("unknown " + std::string(what) + " '" + std::string(text) +
                   "' (choose one of: " + JoinNames(table) + ")");
}

}  // namespace memplan
