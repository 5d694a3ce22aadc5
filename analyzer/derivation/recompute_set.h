#pragma once
// Derivation pass 3, recompute: which nodes' outputs are dropped after forward and re-created in
// backward (ProgramOptions::recompute and ::recompute_modules), validated against the graph. A
// node that does not run (constant folding) has nothing to drop, so it is not recomputed whatever
// the list says. Step emission re-runs a dropped node just before the first backward step that
// needs one of its outputs, recursing into dropped inputs first, so a chain of listed nodes is
// re-run as one segment from its checkpoints (the inputs nobody dropped).
//
// A checkpointed module (torch.utils.checkpoint on one nn.Module) is expressed through the same
// set: every runtime node of the module is dropped except the producers of what leaves it (a
// value read by a node outside the module, or a graph output), which forward keeps, as the
// checkpoint's outputs are kept. Its nodes also form a *group*: the first time backward needs
// any of them, step emission re-runs all of them in topological order, as torch re-runs the whole
// module's forward at the first unpack of one of its saved tensors (use_reentrant=False), so every
// saved tensor of the module exists again at once, one module at a time.
//
//   module h.1:   x ──LN──► a ──attn──► b ──Add(x)──► y ──► (h.2 reads y)
//   dropped:            LN, attn          kept: Add (y leaves the module), x (h.1's input)
//
// What torch does and this does not: it also re-runs the output producers (here the Add) and
// drops their saved tensors; here they are kept from forward (an Add saves nothing; a trailing
// LayerNorm keeps its mean and rstd, batch x seq floats each).

#include <vector>

#include "graph/expected.h"
#include "graph/graph.h"
#include "graph/ids.h"

namespace memplan {

struct RecomputeSet {
  std::vector<bool> recompute;  // per node
  std::vector<NodeId> nodes;    // the recomputed nodes, sorted by id (TrainingProgram::recomputed)
  // Per node, the index in `groups` of the checkpointed module it belongs to, or -1.
  std::vector<int> group_of;
  // Per checkpointed module, its dropped nodes (sorted by id); step emission orders them.
  std::vector<std::vector<NodeId>> groups;
};

// Errors: an id that names no node of `graph`; a node in two modules.
Expected<RecomputeSet> ResolveRecomputeSet(const Graph& graph, const std::vector<NodeId>& listed,
                                           const std::vector<std::vector<NodeId>>& modules = {});

}  // namespace memplan
