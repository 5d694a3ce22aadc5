#pragma once
// The tensors a checkpointed module holds as arguments that the graph computes from shapes alone.
//
// torch.utils.checkpoint keeps every tensor argument of the wrapped call until the module's
// backward is over: the non-reentrant frame's recompute closure holds `args` as long as any saved
// tensor of the module is packed (torch/utils/checkpoint.py, _checkpoint_without_reentrant_
// generator and _checkpoint_hook), the reentrant CheckpointFunction saves them with
// ctx.save_for_backward. A Hugging Face decoder layer is called with the causal mask
// ([batch, 1, seq, seq] floats for eager attention) and the rotary tables (cos, sin: [1, seq,
// head_dim] each), which the model builds once per forward from the sequence length alone. In
// the ONNX graph those are constants folded at import (graph.h: "everything computed only from
// constants"), so memplan never holds them; without checkpointing an additive mask is read by an
// Add that saves nothing and is gone after forward, but every checkpointed layer keeps it (and
// the tables) from its forward until its backward ends, the first layer's the last. Measured on
// a tiny Llama (tools/recipes/measure_hf_checkpointing.py, docs/recipe_rows.jsonl): torch's peak
// in the first layer's MLP backward holds the mask (32,768 B) and cos/sin (4,096 B each).
//
// Which folded values count (each once, by its storage):
//   * read by a node of the module and produced outside it (a value the module computes itself
//     from shapes is re-made by the re-run, like any transient);
//   * followed back through views and same-dtype casts (torch's x.to(x.dtype) is x itself) to
//     the tensor that owns the storage: layers.1 reading layers.0's Unsqueeze of cos holds cos;
//   * produced by a node (an initializer is module state, resident anyway) that is not a
//     Constant (a literal) and is not an integer vector or scalar (sizes and shape vectors are
//     Python ints and torch.Size in PyTorch, not tensors).

#include <functional>
#include <vector>

#include "graph/graph.h"
#include "graph/ids.h"

namespace memplan {

// Per module of `modules` (each the node ids of one checkpointed module), the storage-owning
// folded values it holds as arguments, sorted by id. `is_view(n)`: node n's output aliases its
// input 0 (the op registry's fact).
std::vector<std::vector<ValueId>> CheckpointArguments(
    const Graph& graph, const std::vector<std::vector<NodeId>>& modules,
    const std::function<bool(NodeId)>& is_view);

}  // namespace memplan
