#pragma once
// Gather rows beyond a table, found once the symbols are bound. GPT-2's position embedding is a
// 1024-row table read at torch.arange(seq) (ONNX: Gather(wpe, Range(0, seq, 1))); every shape
// holds for seq = 4096, so the shape re-check (graph/bound_shape_check.h) accepts it, yet PyTorch
// raises "index out of range in self" on the first step. Where a Gather's indices are a Range of
// known bounds (through Unsqueeze, Reshape, Cast and the like), the rows it reads are known, and
// one beyond the table is a warning naming the node, the table and the largest value of the
// binding that stays inside it. A warning, not an error: the model may be meant for longer inputs
// with a table extended at training time, and the plan's memory does not depend on the indices.

#include <string>
#include <vector>

#include "graph/graph.h"
#include "graph/symbols.h"

namespace memplan {

// One sentence per Gather whose Range indices, under `bindings`, reach beyond its data's axis,
// e.g. "node '/wpe/Gather' (Gather) reads row 4095 of 'wpe.weight', which has 1024 rows, at seq =
// 4096: PyTorch raises an index error there; the largest seq this table serves is 1024".
// Indices that are not a Range, or whose bounds stay unbound, are not judged.
std::vector<std::string> IndexRangeWarnings(const Graph& graph, const Bindings& bindings);

}  // namespace memplan
