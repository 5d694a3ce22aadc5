#include "graph/ops/view_layout.h"

#include <cstddef>
#include <cstdint>
#include <optional>
#include <vector>

namespace memplan {
namespace {

bool IsOne(const Dim& d) { return d.constant_value() == std::optional<int64_t>(1); }

std::optional<size_t> NormalizedAxis(int64_t axis, size_t rank) {
  if (axis < 0) axis += static_cast<int64_t>(rank);
  if (axis < 0 || axis >= static_cast<int64_t>(rank)) return std::nullopt;
  return static_cast<size_t>(axis);
}

bool ShapesKnown(const OpContext& ctx) {
  if (ctx.inputs.empty() || !ctx.inputs[0].shape.known) return false;
  for (const TensorInfo& out : ctx.outputs)
    if (out.present && !out.shape.known) return false;
  return true;
}

}  // namespace

Strides RowMajorStrides(const Shape& shape) {
  Strides strides(shape.rank(), Dim(1));
  Dim running(1);
  for (size_t d = shape.rank(); d-- > 0;) {
    strides[d] = running;
    running = running * shape.dims[d];
  }
  return strides;
}

Strides LayoutOf(const Shape& shape, const Strides& strides) {
  return strides.empty() ? RowMajorStrides(shape) : strides;
}

bool IsContiguousLayout(const Shape& shape, const Strides& strides) {
  if (strides.empty()) return true;
  if (!shape.known || strides.size() != shape.rank()) return false;
  Dim expected(1);
  for (size_t d = shape.rank(); d-- > 0;) {
    if (IsOne(shape.dims[d])) continue;
    if (!(strides[d] == expected)) return false;
    expected = expected * shape.dims[d];
  }
  return true;
}

// at::detail::computeStride (aten/src/ATen/TensorUtils.cpp): the old dims split into chunks that
// are each one dense run of memory; every chunk must be made of whole view dims. Symbolic products
// compare exactly (Dim is a polynomial), so "fewer view elements than tensor elements" becomes
// "not yet equal": a view that overshoots never comes back to equal and fails the same way.
std::optional<Strides> ReshapedStrides(const Shape& from, const Strides& strides, const Shape& to) {
  if (!from.known || !to.known) return std::nullopt;
  Strides out(to.rank(), Dim(1));
  if (from.rank() == 0) return out;
  const Strides old = LayoutOf(from, strides);
  if (old.size() != from.rank()) return std::nullopt;
  auto view_d = static_cast<int64_t>(to.rank()) - 1;
  Dim chunk_base_stride = old.back();
  Dim tensor_numel(1);
  Dim view_numel(1);
  for (size_t d = from.rank(); d-- > 0;) {
    tensor_numel = tensor_numel * from.dims[d];
    const bool chunk_ends =
        d == 0 || (!IsOne(from.dims[d - 1]) && !(old[d - 1] == tensor_numel * chunk_base_stride));
    if (!chunk_ends) continue;
    while (view_d >= 0 &&
           (!(view_numel == tensor_numel) || IsOne(to.dims[static_cast<size_t>(view_d)]))) {
      out[static_cast<size_t>(view_d)] = view_numel * chunk_base_stride;
      view_numel = view_numel * to.dims[static_cast<size_t>(view_d)];
      --view_d;
    }
    if (!(view_numel == tensor_numel)) return std::nullopt;
    if (d > 0) {
      chunk_base_stride = old[d - 1];
      tensor_numel = Dim(1);
      view_numel = Dim(1);
    }
  }
  if (view_d != -1) return std::nullopt;
  return out;
}

std::optional<Strides> ExpandedStrides(const Shape& from, const Strides& strides, const Shape& to) {
  if (!from.known || !to.known || to.rank() < from.rank()) return std::nullopt;
  const Strides old = LayoutOf(from, strides);
  const size_t offset = to.rank() - from.rank();
  Strides out(to.rank(), Dim(0));
  for (size_t i = 0; i < from.rank(); ++i) {
    if (from.dims[i] == to.dims[offset + i]) {
      out[offset + i] = old[i];
    } else if (!IsOne(from.dims[i])) {
      return std::nullopt;
    }
  }
  return out;
}

std::optional<std::vector<Strides>> ReshapeViewStrides(const OpContext& ctx, const Strides& input) {
  if (!ShapesKnown(ctx) || ctx.outputs.empty()) return std::nullopt;
  auto strides = ReshapedStrides(ctx.inputs[0].shape, input, ctx.outputs[0].shape);
  if (!strides) return std::nullopt;
  return std::vector<Strides>{std::move(*strides)};
}

std::optional<std::vector<Strides>> TransposeViewStrides(const OpContext& ctx,
                                                         const Strides& input) {
  if (!ShapesKnown(ctx)) return std::nullopt;
  const size_t rank = ctx.inputs[0].shape.rank();
  const Strides old = LayoutOf(ctx.inputs[0].shape, input);
  std::vector<int64_t> perm = ctx.attrs().GetInts("perm");
  if (perm.empty())
    for (size_t i = rank; i-- > 0;) perm.push_back(static_cast<int64_t>(i));
  if (perm.size() != rank) return std::nullopt;
  Strides out;
  for (int64_t p : perm) {
    auto axis = NormalizedAxis(p, rank);
    if (!axis) return std::nullopt;
    out.push_back(old[*axis]);
  }
  return std::vector<Strides>{std::move(out)};
}

std::optional<std::vector<Strides>> ExpandViewStrides(const OpContext& ctx, const Strides& input) {
  if (!ShapesKnown(ctx) || ctx.outputs.empty()) return std::nullopt;
  auto strides = ExpandedStrides(ctx.inputs[0].shape, input, ctx.outputs[0].shape);
  if (!strides) return std::nullopt;
  return std::vector<Strides>{std::move(*strides)};
}

std::optional<std::vector<Strides>> NarrowViewStrides(const OpContext& ctx, const Strides& input) {
  if (!ShapesKnown(ctx)) return std::nullopt;
  const size_t rank = ctx.inputs[0].shape.rank();
  Strides strides = LayoutOf(ctx.inputs[0].shape, input);
  // Slice(data, starts, ends, axes, steps): a step of k keeps every k-th element. torch slices
  // only forwards; a negative step (torch.flip) copies.
  if (ctx.node.op_type == "Slice" && ctx.has_input(4)) {
    if (!ctx.inputs[4].contents) return std::nullopt;
    const std::vector<Dim>& steps = *ctx.inputs[4].contents;
    std::vector<Dim> axes;
    if (ctx.has_input(3)) {
      if (!ctx.inputs[3].contents) return std::nullopt;
      axes = *ctx.inputs[3].contents;
    } else {
      for (size_t i = 0; i < steps.size(); ++i) axes.emplace_back(static_cast<int64_t>(i));
    }
    if (axes.size() != steps.size()) return std::nullopt;
    for (size_t i = 0; i < steps.size(); ++i) {
      const auto step = steps[i].constant_value();
      const auto a = axes[i].constant_value();
      if (!step || *step <= 0 || !a) return std::nullopt;
      auto axis = NormalizedAxis(*a, rank);
      if (!axis) return std::nullopt;
      strides[*axis] = strides[*axis] * Dim(*step);
    }
  }
  return std::vector<Strides>(ctx.outputs.size(), strides);
}

std::optional<std::vector<Strides>> SelectViewStrides(const OpContext& ctx, const Strides& input) {
  if (!ShapesKnown(ctx)) return std::nullopt;
  const size_t rank = ctx.inputs[0].shape.rank();
  auto axis = NormalizedAxis(ctx.attrs().GetInt("axis", 0), rank);
  if (!axis) return std::nullopt;
  Strides strides = LayoutOf(ctx.inputs[0].shape, input);
  strides.erase(strides.begin() + static_cast<std::ptrdiff_t>(*axis));
  return std::vector<Strides>{std::move(strides)};
}

bool GatherSelectsOne(const OpContext& ctx) {
  if (!ctx.has_input(1)) return false;
  const TensorInfo& index = ctx.inputs[1];
  return index.shape.known && index.shape.rank() == 0 && index.contents.has_value() &&
         index.contents->size() == 1;
}

}  // namespace memplan
