#pragma once
// Whether a view op's outputs are contiguous (dense row-major blocks of their storage, as a fresh
// tensor is), given that its input is: the OpSchema::view_stays_contiguous rules of the view ops.
// A strided view is still a view; what it changes is the next reshape, which must copy it
// (OpSchema::view_needs_contiguous_input). Symbolic dims count as larger than 1.

#include "graph/ops/op_schema.h"

namespace memplan {

// Split, Slice: each output narrows input 0 along one axis whose preceding dims are all 1 (a
// chunk of the leading axis is one dense block; a channel chunk of [N, C, H, W] is N blocks).
// Slice steps other than 1 are strided too.
bool NarrowedBlockIsContiguous(const OpContext& ctx);

// Transpose: the axes longer than 1 keep their order (a permutation that only moves size-1 axes,
// or the identity, reorders no element).
bool PermutationIsContiguous(const OpContext& ctx);

// Expand: nothing is broadcast (the output has the input's elements; a stride-0 axis is strided).
bool ExpansionIsContiguous(const OpContext& ctx);

}  // namespace memplan
