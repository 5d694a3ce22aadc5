#pragma once
// Symbolic constant folding for shape sub-graphs. Exporters compute Reshape/Expand targets at run
// time (Shape -> Gather -> Unsqueeze -> Concat -> Reshape); memplan evaluates those small integer
// tensors over symbolic Dims (TensorInfo::contents) so the targets come out as `batch*seq`.
// These helpers are shared by the shape-op rules and the importer.

#include <cstdint>
#include <optional>
#include <vector>

#include "graph/dim.h"
#include "graph/integer_dtypes.h"
#include "graph/ops/op_schema.h"

namespace memplan {

// Tensors with more elements than this never carry contents: shape tensors are short, and
// bounding them keeps folding linear in the model size.
inline constexpr int64_t kMaxFoldedElements = 64;

// The shape's dims as integers when every dim is a known constant.
std::optional<std::vector<int64_t>> ConstantDims(const Shape& shape);
// The element count when it is a known constant no larger than kMaxFoldedElements.
std::optional<int64_t> FoldableElementCount(const Shape& shape);
// Converts integers to Dims.
std::vector<Dim> DimsOf(const std::vector<int64_t>& values);
// True for the integer (IsInteger, graph/integer_dtypes.h) and bool dtypes whose contents are
// folded.
bool IsFoldableDType(DType dtype);

// Contents for an integer op on two folded inputs that the polynomial Dim cannot express (a
// floor division or remainder of a symbol: seq // window, seq % window): a new symbol per
// element, "<prefix>_<n>", as many as the op's broadcast of a one-element side gives. Binding the
// real axes determines them (graph/bound_shape_check.h DeterminedSymbols). nullopt when an input
// is not folded, the element counts do not broadcast, or the context has no symbol table.
std::optional<std::vector<Dim>> FreshContents(const OpContext& ctx, const TensorInfo& a,
                                              const TensorInfo& b, const char* prefix);

// `info`'s contents broadcast (numpy rules) to the constant shape `out_dims`; nullopt when `info`
// has no contents or a non-constant shape.
std::optional<std::vector<Dim>> BroadcastContents(const TensorInfo& info,
                                                  const std::vector<int64_t>& out_dims);

// The contents of a strided view of `info` (constant shape, contents present) over the constant
// `out_dims`: output axis a walks input axis axis_of[a] from first[a] in steps of step[a]
// (Transpose: axis_of = perm, first 0, step 1; Slice: axis_of = identity). nullopt when `info`
// has no contents, a non-constant shape, or an index falls outside it. torch.nn.functional.pad's
// export flips its [n, 2] pads table with a Slice and a Transpose of rank 2.
std::optional<std::vector<Dim>> StridedContents(const TensorInfo& info,
                                                const std::vector<int64_t>& out_dims,
                                                const std::vector<int64_t>& axis_of,
                                                const std::vector<int64_t>& first,
                                                const std::vector<int64_t>& step);

// Three-valued comparisons of Dims, assuming every symbol stands for a positive integer (dims
// are). nullopt when undecidable, e.g. `seq < 128`.
std::optional<bool> DimsEqual(const Dim& a, const Dim& b);
std::optional<bool> DimLess(const Dim& a, const Dim& b);

}  // namespace memplan
