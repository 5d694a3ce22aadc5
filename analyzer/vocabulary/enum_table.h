#pragma once
// A value per enumerator, written as data: a table of {enumerator, value} rows in place of a
// switch that only returns constants (a file name, a colour, a ZeRO stage). A table that gives
// every enumerator its row checks so at compile time against the enum's name table
// (name_table.h), as -Wswitch checked the switch it replaces:
//
//   inline constexpr EnumTable<Precision, std::string_view, 3> kMixedPrecisionValues = {{
//       {Precision::kFp32, "'no'"},
//       {Precision::kFp16, "fp16"},
//       {Precision::kBf16, "bf16"},
//   }};
//   static_assert(ListsEvery(kMixedPrecisionValues, kPrecisionNames));
//
//   ValueOf(kMixedPrecisionValues, Precision::kBf16)  -> "bf16"
//
// A table of the few enumerators that matter (the widths of the floating dtypes) leaves out the
// rest and is read with ValueOr. Where the value belongs to the vocabulary itself, it is a column
// of the vocabulary's list instead, and MEMPLAN_ENUM_COLUMN (at the end of this file) makes the
// table from it.

#include <array>
#include <cstddef>

#include "analyzer/vocabulary/name_table.h"
#include "graph/expected.h"

namespace memplan {

template <class Enum, class Value>
struct EnumRow {
  Enum key;
  Value value;
};

template <class Enum, class Value, size_t N>
using EnumTable = std::array<EnumRow<Enum, Value>, N>;

// Whether `table` has one row per enumerator of `names` (the enum's own name table), in its
// order: a new enumerator then fails the static_assert beside the table until it has its row.
template <class Enum, class Value, size_t M, size_t N>
constexpr bool ListsEvery(const EnumTable<Enum, Value, M>& table, const NameTable<Enum, N>& names) {
  if (M != N) return false;
  for (size_t i = 0; i < N; ++i)
    if (table[i].key != names[i].value) return false;
  return true;
}

// The value of `key`'s row, or `fallback` when the table has none.
template <class Enum, class Value, size_t N>
constexpr Value ValueOr(const EnumTable<Enum, Value, N>& table, Enum key, Value fallback) {
  for (const EnumRow<Enum, Value>& row : table)
    if (row.key == key) return row.value;
  return fallback;
}

// The value of `key`'s row. REQUIRES: `table` has one (a table checked with ListsEvery has one
// for every enumerator).
template <class Enum, class Value, size_t N>
Value ValueOf(const EnumTable<Enum, Value, N>& table, Enum key) {
  for (const EnumRow<Enum, Value>& row : table)
    if (row.key == key) return row.value;
  MEMPLAN_UNREACHABLE("an enumerator is missing from its table");
  return table[0].value;
}

}  // namespace memplan

// MEMPLAN_ENUM_COLUMN(Enum, LIST, Value): the EnumTable<Enum, Value, N> of the column LIST's
// X(enumerator, "name", value) carries after the name, one row per enumerator in LIST's order:
//
//   #define MEMPLAN_EXPORT_TARGETS(X)                \
//     X(kDeepSpeed, "deepspeed", "ds_config.json") \
//     X(kPytorchLoop, "pytorch", "train_loop.py")
//   MEMPLAN_NAMED_ENUM(ExportTarget, MEMPLAN_EXPORT_TARGETS);
//   inline constexpr auto kExportTargetFileNames =
//       MEMPLAN_ENUM_COLUMN(ExportTarget, MEMPLAN_EXPORT_TARGETS, std::string_view);
//
// An X without the column does not compile, so every enumerator has its value.
#define MEMPLAN_ENUM_COLUMN_ROW(enumerator, name, value) {enumerator, value},
#define MEMPLAN_ENUM_COLUMN(Enum, LIST, Value)                                              \
  [] {                                                                                      \
    using enum Enum;                                                                        \
    return std::to_array<::memplan::EnumRow<Enum, Value>>({LIST(MEMPLAN_ENUM_COLUMN_ROW)}); \
  }()
