#pragma once
// How an op carries a tensor split into equal parts along one axis, one part per rank (Megatron
// tensor parallelism, analyzer/parallel/tensor_parallel.h): given which axis of each input is
// split, which axis of each output is, or nullopt when the op cannot run on the parts alone.
//
// An op runs on the parts when every element of a part depends only on the same part of its
// inputs: elementwise ops (a whole operand must broadcast along the split axis, or be a parameter
// or constant of the full size, which is then split with it), reductions and normalisations over
// other axes, layout ops that keep the split axis whole (Reshape and Transpose move it; a part is
// still one contiguous block of the new axis), products whose contraction is not the split axis,
// and the fused attention split on its heads axis. Everything else, including a contraction
// over the split axis (a partial sum that needs an all-reduce: the caller's row-parallel product),
// is nullopt.
//
// The rule is the op's fact, kept beside the registry; the split itself is the caller's.

#include <cstdint>
#include <optional>
#include <vector>

#include "graph/graph.h"

namespace memplan {

inline constexpr int kUnsplit = -1;  // the tensor is whole on every rank

// How a tensor is split. Its `axis` of n elements is outer x factor x inner: `inner` elements per
// step of the factor, `outer` repeats above it; each rank holds factor / parts of the factor for
// every outer and inner index. A column-parallel output splits its whole last axis (factor n,
// inner 1); a reshape into heads moves the split to the heads axis (factor heads, inner 1), and
// folding heads into the batch ([S, B*H, D]) keeps B as the outer part. Byte-wise each rank's
// axis is n / parts.
struct TensorSplit {
  int axis = kUnsplit;
  int64_t factor = 0;
  Dim inner = 1;
  bool split() const { return axis != kUnsplit; }
  friend bool operator==(const TensorSplit&, const TensorSplit&) = default;
};

// The split of a whole axis of `size` elements (a column-parallel output).
TensorSplit WholeAxisSplit(int axis, const Dim& size);

struct SplitAxes {
  // Per input slot. A whole parameter or constant input may come back split (it is partitioned
  // with the activation it meets: a bias, a norm scale).
  std::vector<TensorSplit> inputs;
  std::vector<TensorSplit> outputs;  // per output slot
};

// REQUIRES: `inputs` has one entry per input slot of `node`, at least one of them split;
// `parts` > 1. Every split factor must be a multiple of `parts`.
std::optional<SplitAxes> PropagateSplit(const Graph& graph, const Node& node,
                                        const std::vector<TensorSplit>& inputs, int64_t parts);

// Whether `parts` divides `dim` exactly (every coefficient of a symbolic size: 8*batch by 2).
bool DividesInto(const Dim& dim, int64_t parts);

}  // namespace memplan
