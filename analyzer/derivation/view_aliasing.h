#pragma once
// Derivation pass, view aliasing: which nodes run as views (their outputs alias input 0's storage
// and allocate nothing) and the layout (strides) of every view, as torch decides them. The
// registry says which ops are views (OpSchema::is_view, and view_applies for an op that is one
// only in some forms: Gather with a scalar index is torch's select) and what strides each gives
// its outputs (OpSchema::view_strides, graph/ops/view_layout.h), which also says when torch
// cannot view and copies; this pass walks the graph once to apply that:
//
//   h [B, S, 3E] ─► Slice(last axis) ─► q (strided view of h) ─► Reshape [B, S, H, D] (a view)
//   k [B, Hkv, S, D] ─► Unsqueeze ─► Expand(n_rep) (stride 0) ─► Reshape ─► [B, H, S, D] (a copy)
//   x [N, C, H, W] ─► Split(axis 1) ─► x1, x2 (strided views: a saved x2 keeps all of x)
//
// Fresh tensors (every non-view output) are dense row-major.

#include <vector>

#include "analyzer/derivation/program_dtypes.h"
#include "graph/graph.h"
#include "graph/ids.h"
#include "graph/ops/op_schema.h"

namespace memplan {

class OpRegistry;

struct ViewAliasing {
  std::vector<bool> node_is_view;      // per node: its outputs are views of input 0
  std::vector<Strides> value_strides;  // per value: a view's strides (empty: dense row-major)
  std::vector<bool> value_is_strided;  // per value: a view that is not a dense row-major block
};

// REQUIRES: `order` is a topological order of `graph`.
// `dtypes`: the program's dtypes, when known: a node that lays its outputs out itself
// (OpSchema::output_strides) may depend on the dtype it computes in (flash attention runs only in
// half precision); it sees its floating inputs in that dtype (an op reads casts of the others,
// which keep their layout). Without them the graph's dtypes stand.
ViewAliasing DecideViews(const Graph& graph, const OpRegistry& registry,
                         const std::vector<NodeId>& order, const ProgramDTypes* dtypes = nullptr);

// A Cast to the dtype its input is already stored in is torch's `x.to(dtype)` / `x.float()`
// returning x itself: no copy, the output aliases the input (HF's RMSNorm `.to(float32)` of an
// fp32 residual, `softmax(..., dtype=float32).to(query.dtype)` in fp32). Whether it is depends
// on the program's dtypes, not the graph's (under autocast the second one is a real bf16 copy),
// so this runs once they are placed. `value_dtype` is per value the stored dtype (kUndefined:
// the graph's own).
void AliasSameDTypeCasts(const Graph& graph, const std::vector<NodeId>& order,
                         const std::vector<DType>& value_dtype, ViewAliasing& views);

}  // namespace memplan
