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

#define MEMPLAN_RECOMPUTE_UNITS(X) \
  X(kAuto, "auto")                 \
  X(kNode, "node")                 \
  X(kModule, "module")
// "module" -> kModule; error "unknown recompute unit 'x' (choose one of: auto, node, module)".
MEMPLAN_VOCABULARY(RecomputeUnit, MEMPLAN_RECOMPUTE_UNITS, "recompute unit");

}  // namespace memplan
