#pragma once
// The granularity a recompute plan is chosen at (--recompute-unit).
//
//   node    any set of graph nodes (the chain DP's segments): the least memory for the time, but a
//           training script can only run it by hand-written checkpoints at those nodes;
//   module  whole checkpoint modules (analyzer/recompute/module_units.h: the repeated blocks the
//           node scopes name, "h.5", "layer3.1"), each one torch.utils.checkpoint of that module:
//           exactly what the exports wrap, so the planned peak and time are the exported run's;
//   auto    module when the model's node names carry module scopes (PyTorch exports) and the
//           recompute kind has a module form, node otherwise. Never appears in a plan.

#include <cstdint>
#include <string_view>

#include "analyzer/vocabulary/name_table.h"

namespace memplan {

enum class RecomputeUnit : uint8_t { kAuto, kNode, kModule };

inline constexpr NameTable<RecomputeUnit, 3> kRecomputeUnitNames = {{
    {RecomputeUnit::kAuto, "auto"},
    {RecomputeUnit::kNode, "node"},
    {RecomputeUnit::kModule, "module"},
}};

inline std::string_view RecomputeUnitName(RecomputeUnit unit) {
  return NameOf(kRecomputeUnitNames, unit);
}
// "module" -> kModule; error "unknown recompute unit 'x' (choose one of: auto, node, module)".
inline Expected<RecomputeUnit> ParseRecomputeUnit(std::string_view text) {
  return ParseName(kRecomputeUnitNames, text, "recompute unit");
}

}  // namespace memplan
