#pragma once
// Ops whose output length depends on the values they read, planned at an upper bound. NonZero's
// count is data-dependent (torch.nonzero syncs with the device to learn it); its shape rule
// (graph/ops/shape_ops_query.cc) counts exactly when the input's values are known at import and
// otherwise plans every element of the input as non-zero, the largest the output can be, so the
// plan covers any data instead of asking the user for a `--dim` the data decides. This names the
// nodes planned at that bound in one import warning. A constant non-zero fill
// (NonZero(ConstantOfShape(n, 1)), the TorchScript exporter's opset-9 arange) is exact, not warned.

#include "graph/graph.h"

namespace memplan {

// Adds one warning to graph.warnings when any NonZero's count was planned at its upper bound,
// e.g. "2 NonZero nodes have a data-dependent count, planned at its upper bound (every input
// element non-zero): 'mask_nonzero' [2, 3, seq] of [batch, seq] ...".
void WarnDataDependentCounts(Graph& graph);

}  // namespace memplan
