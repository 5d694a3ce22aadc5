#pragma once
// The training precision: the one type the planner, the search, the exports and the CLI share.
// A PrecisionChoice is a request that may leave the precision to the search (auto); its fixed
// names are Precision's.

#include <cstdint>
#include <optional>
#include <string_view>

#include "analyzer/vocabulary/enum_table.h"
#include "analyzer/vocabulary/name_table.h"
#include "graph/dtype.h"

namespace memplan {

// The last column is the precision's working (half) dtype, kUndefined for fp32 (WorkingDType).
#define MEMPLAN_PRECISIONS(X)                                                              \
  X(kFp32, "fp32", DType::kUndefined) /* everything in fp32 */                             \
  /* mixed precision: fp16 compute where safe, fp32 masters, loss scaling by default */    \
  X(kFp16, "fp16", DType::kFloat16)                                                        \
  /* mixed precision: bf16 compute where safe, fp32 masters, no loss scaling by default */ \
  X(kBf16, "bf16", DType::kBFloat16)
// "fp16" -> kFp16; error "unknown precision 'x' (choose one of: fp32, fp16, bf16)".
MEMPLAN_VOCABULARY(Precision, MEMPLAN_PRECISIONS, "precision");
inline constexpr auto kPrecisionWorkingDTypes =
    MEMPLAN_ENUM_COLUMN(Precision, MEMPLAN_PRECISIONS, DType);

// What a user asks the search for: one precision, or auto (fp32 and the GPU's fastest 16-bit
// format, whichever plans faster).
#define MEMPLAN_PRECISION_CHOICES(X) \
  MEMPLAN_PRECISIONS(X)              \
  X(kAuto, "auto")
// "auto" -> kAuto; error "unknown precision 'x' (choose one of: fp32, fp16, bf16, auto)".
MEMPLAN_VOCABULARY(PrecisionChoice, MEMPLAN_PRECISION_CHOICES, "precision");

// The precision a choice fixes: the Precision of the same name (MEMPLAN_PRECISION_CHOICES lists
// MEMPLAN_PRECISIONS); nullopt for auto, which names none.
inline std::optional<Precision> FixedPrecision(PrecisionChoice choice) {
  return FindName(kPrecisionNames, PrecisionChoiceName(choice));
}

}  // namespace memplan
