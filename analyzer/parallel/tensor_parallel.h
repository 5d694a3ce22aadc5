#pragma once
// `--tp T`: Megatron-style tensor parallelism, applied to a loaded graph so that every later stage
// (derivation, simulator, cost model, reports) sees what one rank of a tensor-parallel group
// holds and computes.
//
// A linear product x W (graph/linear_weight.h, a weight used once) whose input x is whole on
// every rank is column-parallel: W is split by
// output features, so its output is split along the last axis. The split is carried forward op by
// op (graph/ops/split_axis_rules.h: bias adds, activations, reshapes into heads, transposes, the
// attention scores, softmax, dropout, the attention itself) until it reaches a linear product
// that contracts over the split axis: row-parallel, W split by input features, each rank holding a
// partial sum that an all-reduce over the group makes whole again. This is Megatron-LM's
// attention (QKV column, output projection row; heads divided among ranks) and MLP (fc1 column,
// fc2 row), found from the graph instead of from module names, so a block's attention and MLP
// split whatever its modules are called; the repeated blocks (analyzer/recompute/module_units.h:
// "h.3", "encoder.layer.7") are only counted for the report.
//
// A region is kept only when every tensor it splits ends in row-parallel products: a split
// tensor that reaches a graph output, a norm over the split axis or a whole activation of the
// full size makes its column seeds whole again (the next pass retries without them). Layer
// norms, residual adds, embeddings and the head stay replicated, as in Megatron without sequence
// parallelism.
//
// The rewrite divides the split axis of every split value (activations, their gradients and the
// split parameters) by T in the graph's shapes. Per micro-batch the group all-reduces each
// row-parallel output in forward and the input gradient of each column-parallel region in
// backward (Megatron's g and f operators), in place: no memory, only time (the planner adds it
// on the intra-node link, not overlapped: the next op waits for it).

#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "graph/dim.h"
#include "graph/expected.h"
#include "graph/graph.h"

namespace memplan {

struct TensorParallelPlan {
  int64_t degree = 1;               // T; 1 = no tensor parallelism
  int64_t blocks = 0;               // repeated blocks found
  int64_t blocks_split = 0;         // blocks with at least one region split
  std::vector<std::string> column;  // column-parallel weights, in graph order
  std::vector<std::string> row;     // row-parallel weights, in graph order
  // The elements each all-reduce of one micro-batch carries (symbolic in the batch), forward
  // (row outputs) and backward (gradients of column inputs).
  std::vector<Dim> forward_all_reduces;
  std::vector<Dim> backward_all_reduces;
  int64_t parameters_before = 0;  // trainable parameter elements of the whole model
  int64_t parameters_after = 0;   // and of one rank
  bool enabled() const { return degree > 1; }
};

// Splits `graph` for `degree` ranks (a no-op plan for degree 1). Errors (bad input, one line):
// degree < 1; a region that stops at a size T does not divide (heads); no region that splits.
Expected<TensorParallelPlan> ApplyTensorParallel(Graph& graph, int64_t degree,
                                                 const std::string& model_name);

// `plan.tensor_parallel` in the memplan/1 JSON; null when not enabled.
nlohmann::ordered_json TensorParallelJson(const TensorParallelPlan& plan);
// The report's line ("tensor parallel 4: 12 of 12 blocks split, 48 linear layers ..."); empty
// when not enabled.
std::string TensorParallelLine(const TensorParallelPlan& plan);

}  // namespace memplan
