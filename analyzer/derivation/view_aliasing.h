#pragma once
// Derivation pass, view aliasing: which nodes run as views (their outputs alias input 0's storage
// and allocate nothing) and which values are strided views, as torch decides it. The registry says
// which ops are views (OpSchema::is_view), which return strided views
// (OpSchema::view_stays_contiguous) and which view only a contiguous input
// (OpSchema::view_needs_contiguous_input); this pass walks the graph once to apply that:
//
//   h [B, S, 3E] ─► Slice(last axis) ─► q (strided view of h) ─► Reshape ─► q2 (a copy)
//   k [B, Hkv, S, D] ─► Unsqueeze ─► Expand(n_rep) (strided) ─► Reshape ─► [B, H, S, D] (a copy)
//   x [N, C, H, W] ─► Split(axis 1) ─► x1, x2 (strided views: a saved x2 keeps all of x)
//
// Fresh tensors (every non-view output) are contiguous; a strided value stays strided through
// views that accept it (Squeeze, Unsqueeze, Identity, Transpose, Slice...).

#include <vector>

#include "graph/graph.h"
#include "graph/ids.h"

namespace memplan {

class OpRegistry;

struct ViewAliasing {
  std::vector<bool> node_is_view;      // per node: its outputs are views of input 0
  std::vector<bool> value_is_strided;  // per value: a view that is not a dense row-major block
};

// REQUIRES: `order` is a topological order of `graph`.
ViewAliasing DecideViews(const Graph& graph, const OpRegistry& registry,
                         const std::vector<NodeId>& order);

}  // namespace memplan
