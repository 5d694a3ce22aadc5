#pragma once
// Derivation pass 2b, torch.compile (--compile, ProgramOptions::compile): the saved set
// AOTAutograd's min-cut partitioner keeps (torch/_functorch/partitioners.py,
// min_cut_rematerialization_partition, what Inductor's training path calls). Forward values are
// cut at the smallest total size from which backward can recompute everything it reads:
//
//   source ─inf─► banned v_in ─weight(v)─► v_out ─inf─► u_in (each forward reader u of v)
//                                          v_out ─inf─► sink (v saved by some op's backward)
//
// * Banned (never recomputed, `should_ban_recomputation`): graph inputs and outputs, ops the
//   registry does not mark pointwise (OpSchema::pointwise: mm/bmm/addmm, convolution, the norms'
//   and softmax's kernels, reductions), random ops (OpSchema::stochastic), ops that make extra
//   buffers for backward and a linear layer's bias add (nn.Linear's MatMul + Add is one addmm);
//   and a value a non-fusible op's backward reads, through views (`is_materialized_backwards`: a
//   matmul's weight gradient reads its input, so that stays).
// * weight(v) = bytes x 1.1^clamp(distance from backward, 1, 100), doubled when every reader of
//   v is fusible (`get_node_weight`); views are never saved on their own (their base is); a
//   parameter costs nothing to save (`treat_parameters_as_free_to_save`), so parameters are left
//   out of the network.
// * An op whose compiled backward reads less than its eager one (OpSchema::saved_when_compiled:
//   ReLU's bool mask) offers that as one more cut point between its saved tensors and the sink.
//
// The result is expressed with memplan's recompute machinery: the sink-side nodes are re-run in
// backward (recompute_set.h), and an op whose mask was cut saves the mask (step_emission.cc).
// Sizes are compared with every free symbol at kPartitionSymbolValue; activations all scale with
// the batch, so the cut does not depend on it.
//
// What the real partitioner sees and this does not: Inductor decomposes the norms, softmax and
// GELU into pointwise ops and reductions first, so it may recompute a softmax's probabilities
// from the scores and its max and sum (4 KiB more on the BERT layer of docs/compile_rows.jsonl);
// here those kernels keep their eager saved tensors.

#include <vector>

#include "analyzer/derivation/gradient_flow.h"
#include "analyzer/derivation/program_dtypes.h"
#include "analyzer/derivation/view_aliasing.h"
#include "graph/graph.h"
#include "graph/ids.h"

namespace memplan {

class OpRegistry;

// The value every free symbol takes when the partition compares sizes.
inline constexpr int64_t kPartitionSymbolValue = 64;

struct CompiledPartition {
  std::vector<NodeId> recompute;     // nodes re-run in backward, sorted by id
  std::vector<bool> saves_compiled;  // per node: saves OpSchema::saved_when_compiled
};

// REQUIRES: the other passes' values for `graph` (gradients, dtypes, views) and `order`
// topological. A graph with nothing to cut returns no recompute and no mask.
CompiledPartition PartitionLikeInductor(const Graph& graph, const OpRegistry& registry,
                                        const std::vector<NodeId>& order,
                                        const GradientFlow& gradients, const ProgramDTypes& dtypes,
                                        const ViewAliasing& views,
                                        const std::vector<ValueId>& model_outputs);

}  // namespace memplan
