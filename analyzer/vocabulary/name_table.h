#pragma once
// The mechanism every vocabulary shares: an enum's names as one table, and the parse that reads
// them back. A vocabulary is written once, as a list of its enumerators with their names, and
// MEMPLAN_VOCABULARY (at the end of this file) makes the enum, the table and the functions from
// it: an enumerator and its name stand on one line, and the name, the parse and the list of
// choices in error messages cannot drift apart.
//
//   #define MEMPLAN_PRECISIONS(X) X(kFp32, "fp32") X(kFp16, "fp16") X(kBf16, "bf16")
//   MEMPLAN_VOCABULARY(Precision, MEMPLAN_PRECISIONS, "precision");
//
//   PrecisionName(Precision::kFp16)  = NameOf(kPrecisionNames, Precision::kFp16)  -> "fp16"
//   ParsePrecision("fp8")            = ParseName(kPrecisionNames, "fp8", "precision")
//                                    -> error "unknown precision 'fp8' (choose one of: fp32,
//                                       fp16, bf16)"
//
// Error messages name the concept, never a command-line flag: the CLI adds its flag names.

#include <array>
#include <cstddef>
#include <cstdint>
#include <optional>
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
  MEMPLAN_UNREACHABLE("an enumerator is missing from its name table");
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

// The enumerator named `text` (exact, case-sensitive), or nullopt: for a parse whose error
// message is its own (ParseExportTarget, ParseCheckFormat, ParseAllocatorKind).
template <class Enum, size_t N>
std::optional<Enum> FindName(const NameTable<Enum, N>& table, std::string_view text) {
  for (const NamedValue<Enum>& entry : table)
    if (entry.name == text) return entry.value;
  return std::nullopt;
}

// The enumerator named `text` (exact, case-sensitive). The error names `what` and the choices:
// "unknown optimizer 'adamax' (choose one of: sgd, momentum, adam, adamw, adafactor)".
template <class Enum, size_t N>
Expected<Enum> ParseName(const NameTable<Enum, N>& table, std::string_view text,
                         std::string_view what) {
  if (std::optional<Enum> value = FindName(table, text)) return *value;
  return MakeError("unknown " + std::string(what) + " '" + std::string(text) +
                   "' (choose one of: " + JoinNames(table) + ")");
}

// The enumerators in table order, for a loop over every one (kAllMemoryCategories).
template <class Enum, size_t N>
constexpr std::array<Enum, N> ValuesOf(const NameTable<Enum, N>& table) {
  std::array<Enum, N> values{};
  for (size_t i = 0; i < N; ++i) values[i] = table[i].value;
  return values;
}

}  // namespace memplan

// MEMPLAN_NAMED_ENUM(Enum, LIST) defines, in the current namespace,
//
//   enum class Enum : uint8_t { the enumerators of LIST, in its order };
//   inline constexpr NameTable<Enum, N> kEnumNames;  // every enumerator with its name
//   std::string_view EnumName(Enum value);           // NameOf(kEnumNames, value)
//
// and MEMPLAN_VOCABULARY(Enum, LIST, "what") these and the parse of a name a user gives:
//
//   Expected<Enum> ParseEnum(std::string_view text); // ParseName(kEnumNames, text, "what")
//
// LIST is an X-macro (as LLVM's .def files are) with one X(enumerator, "name") per enumerator,
// each one's comment beside it or above it:
//
//   #define MEMPLAN_ZERO_GRAD_MODES(X)                                          \
//     X(kSetToNone, "set_to_none") /* PyTorch's default: gradients are freed */ \
//     X(kZero, "zero")             /* gradients stay allocated and are zeroed */
//   MEMPLAN_VOCABULARY(ZeroGradMode, MEMPLAN_ZERO_GRAD_MODES, "zero_grad mode");
//
// The list stays defined, so a vocabulary that extends another can name it (precision.h). An X
// may carry one more column after the name, a value each enumerator has (export_target.h: the
// file name of each target's output); the enum and its names ignore it, and
// MEMPLAN_ENUM_COLUMN (enum_table.h) makes the table of it.
#define MEMPLAN_VOCABULARY_ENUMERATOR(enumerator, name, ...) enumerator,
#define MEMPLAN_VOCABULARY_NAMED_VALUE(enumerator, name, ...) {enumerator, name},
#define MEMPLAN_NAMED_ENUM(Enum, LIST)                                                         \
  enum class Enum : uint8_t { LIST(MEMPLAN_VOCABULARY_ENUMERATOR) };                           \
  inline constexpr auto k##Enum##Names = [] {                                                  \
    using enum Enum;                                                                           \
    return std::to_array<::memplan::NamedValue<Enum>>({LIST(MEMPLAN_VOCABULARY_NAMED_VALUE)}); \
  }();                                                                                         \
  inline std::string_view Enum##Name(Enum value) { return NameOf(k##Enum##Names, value); }
#define MEMPLAN_VOCABULARY(Enum, LIST, what)                 \
  MEMPLAN_NAMED_ENUM(Enum, LIST)                             \
  inline Expected<Enum> Parse##Enum(std::string_view text) { \
    return ParseName(k##Enum##Names, text, what);            \
  }
