#pragma once
// The layout of views, as torch computes it: element strides per dim (OpSchema's Strides), the
// strides each view op gives its outputs (the OpSchema::view_strides rules), whether a layout is
// contiguous, and whether a reshape can view a layout at all (torch's computeStride; when it
// cannot, reshape copies). Symbolic dims count as larger than 1.

#include <optional>
#include <vector>

#include "graph/ops/op_schema.h"

namespace memplan {

// The dense row-major strides of `shape` (a fresh tensor's).
Strides RowMajorStrides(const Shape& shape);

// `strides` spelled out: empty means row-major.
Strides LayoutOf(const Shape& shape, const Strides& strides);

// Whether a tensor of `shape` laid out with `strides` (empty: row-major) is one dense row-major
// block, as .is_contiguous() says: size-1 dims do not count.
bool IsContiguousLayout(const Shape& shape, const Strides& strides);

// The strides `to` has as a view of a tensor of `from` with `strides` (torch's computeStride, the
// rule of view and reshape), or nullopt when no view can express it and reshape copies.
std::optional<Strides> ReshapedStrides(const Shape& from, const Strides& strides, const Shape& to);

// The strides of `from` broadcast to `to` (Expand's rule: a new or broadcast dim gets stride 0);
// nullopt when `to` is not a broadcast of `from`.
std::optional<Strides> ExpandedStrides(const Shape& from, const Strides& strides, const Shape& to);

// The view rules, by op (OpSchema::view_strides). Each returns the strides of every output.
// Reshape, Flatten, Squeeze, Unsqueeze: output 0 reshapes input 0 (nullopt: a copy).
std::optional<std::vector<Strides>> ReshapeViewStrides(const OpContext& ctx, const Strides& input);
// Transpose: the strides permuted by `perm`.
std::optional<std::vector<Strides>> TransposeViewStrides(const OpContext& ctx,
                                                         const Strides& input);
// Expand: broadcast dims have stride 0.
std::optional<std::vector<Strides>> ExpandViewStrides(const OpContext& ctx, const Strides& input);
// Split, Slice: each output narrows input 0 and keeps its strides (a Slice step multiplies its
// axis's stride).
std::optional<std::vector<Strides>> NarrowViewStrides(const OpContext& ctx, const Strides& input);
// Gather with one scalar index (torch's select): the selected axis's stride drops out.
std::optional<std::vector<Strides>> SelectViewStrides(const OpContext& ctx, const Strides& input);

// Gather's index is one constant scalar: torch's select(dim, i), a view. An index tensor (an
// embedding lookup) or a run-time index gathers into a new tensor.
bool GatherSelectsOne(const OpContext& ctx);

}  // namespace memplan
