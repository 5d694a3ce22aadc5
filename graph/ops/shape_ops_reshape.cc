// Ops that rearrange a tensor without computing on it: Reshape, Flatten, Squeeze, Unsqueeze,
// Transpose, Expand (all views in PyTorch) and Tile (a copy). The view shapes are the shared
// geometry's (graph/ops/geometry/reshape.h).

#include "graph/ops/common_rules.h"
#include "graph/ops/geometry/reshape.h"
#include "graph/ops/shape_helpers.h"
#include "graph/ops/shape_ops_folding.h"
#include "graph/ops/shape_ops_internal.h"
#include "graph/ops/view_layout.h"

namespace memplan {
namespace {

std::vector<TensorInfo> Unknown(DType dtype) { return SingleOutput(dtype, Shape::Unknown()); }

Status RejectNegative(const OpContext& ctx, const std::vector<Dim>& dims, const char* what) {
  for (const Dim& d : dims) {
    if (auto c = d.constant_value(); c && *c < 0) {
      return MakeError(
          NodeError(ctx.node, std::string("negative value ") + std::to_string(*c) + " in " + what));
    }
  }
  return OkStatus();
}

// The shared geometry's error, naming the node.
template <class T>
Expected<T> Named(const OpContext& ctx, Expected<T> result) {
  if (!result.ok()) return MakeError(NodeError(ctx.node, result.error().message));
  return result;
}

Expected<std::vector<TensorInfo>> InferReshape(const OpContext& ctx) {
  const TensorInfo& data = ctx.inputs.at(0);
  const bool allow_zero = ctx.attrs().GetInt("allowzero", 0) != 0;
  if (!ctx.has_input(1) || !ctx.inputs[1].contents) return Unknown(data.dtype);
  MEMPLAN_TRY(ReshapeOutput<Dim> out,
              Named(ctx, ReshapeShape(data.shape.known ? &data.shape.dims : nullptr,
                                      *ctx.inputs[1].contents, allow_zero)));
  if (out.needs_input) return Unknown(data.dtype);
  if (out.unresolved) {
    // Not exact (or the input is unknown): a fresh symbol keeps the rank and the other dims.
    if (!ctx.symbols) return Unknown(data.dtype);
    out.dims[*out.unresolved] = Dim::Symbol(ctx.symbols->Fresh("reshape"));
  }
  return std::vector<TensorInfo>{MakeOutput(data.dtype, Shape{std::move(out.dims)}, data.contents)};
}

Expected<std::vector<TensorInfo>> InferFlatten(const OpContext& ctx) {
  const TensorInfo& data = ctx.inputs.at(0);
  if (!data.shape.known) return Unknown(data.dtype);
  MEMPLAN_TRY(std::vector<Dim> out,
              Named(ctx, FlattenShape(data.shape.dims, ctx.attrs().GetInt("axis", 1))));
  return std::vector<TensorInfo>{MakeOutput(data.dtype, Shape{std::move(out)}, data.contents)};
}

using AxesGeometry = Expected<std::vector<Dim>> (*)(const std::vector<Dim>&,
                                                    const std::vector<int64_t>&);

// Squeeze and Unsqueeze differ only in their geometry: both take `axes` from input 1 (opset 13)
// or the attribute, and both pass the contents (and known floating values: F.pad's amounts from
// Python-float arithmetic, unsqueezed before their Concat) through, as views do.
Expected<std::vector<TensorInfo>> InferAxesView(const OpContext& ctx, AxesGeometry geometry) {
  const TensorInfo& data = ctx.inputs.at(0);
  if (!data.shape.known) return Unknown(data.dtype);
  auto axes = IntsFromInputOrAttribute(ctx, 1, "axes", {});
  if (!axes) return Unknown(data.dtype);
  MEMPLAN_TRY(std::vector<Dim> out, Named(ctx, geometry(data.shape.dims, *axes)));
  TensorInfo info = MakeOutput(data.dtype, Shape{std::move(out)}, data.contents);
  info.float_values = data.float_values;
  return std::vector<TensorInfo>{std::move(info)};
}

Expected<std::vector<TensorInfo>> InferSqueeze(const OpContext& ctx) {
  return InferAxesView(ctx, &SqueezeShape<Dim>);
}

Expected<std::vector<TensorInfo>> InferUnsqueeze(const OpContext& ctx) {
  return InferAxesView(ctx, &UnsqueezeShape<Dim>);
}

Expected<std::vector<TensorInfo>> InferTranspose(const OpContext& ctx) {
  const TensorInfo& data = ctx.inputs.at(0);
  if (!data.shape.known) return Unknown(data.dtype);
  const size_t rank = data.shape.rank();
  std::vector<int64_t> perm = ctx.attrs().GetInts("perm");
  if (perm.empty()) {
    for (size_t i = rank; i-- > 0;) perm.push_back(static_cast<int64_t>(i));
  }
  if (perm.size() != rank) {
    return MakeError(NodeError(ctx.node, "perm has " + std::to_string(perm.size()) +
                                             " entries for an input of rank " +
                                             std::to_string(rank)));
  }
  Shape out;
  std::vector<bool> used(rank, false);
  for (int64_t p : perm) {
    MEMPLAN_TRY(int64_t axis, NormalizeAxis(p, rank, ctx.node));
    if (used[static_cast<size_t>(axis)])
      return MakeError(NodeError(ctx.node, "perm repeats axis " + std::to_string(p)));
    used[static_cast<size_t>(axis)] = true;
    out.dims.push_back(data.shape.dims[static_cast<size_t>(axis)]);
  }
  // Row-major order is unchanged only for rank <= 1; above it the contents are permuted (F.pad's
  // export transposes its [n, 2] pads table).
  std::optional<std::vector<Dim>> contents;
  if (rank <= 1) {
    contents = data.contents;
  } else if (auto out_dims = ConstantDims(out)) {
    std::vector<int64_t> zeros(rank, 0), ones(rank, 1);
    std::vector<int64_t> axes;
    for (int64_t p : perm) axes.push_back(p < 0 ? p + static_cast<int64_t>(rank) : p);
    contents = StridedContents(data, *out_dims, axes, zeros, ones);
  }
  return std::vector<TensorInfo>{MakeOutput(data.dtype, out, std::move(contents))};
}

Expected<std::vector<TensorInfo>> InferExpand(const OpContext& ctx) {
  const TensorInfo& data = ctx.inputs.at(0);
  if (!ctx.has_input(1) || !ctx.inputs[1].contents) return Unknown(data.dtype);
  Shape target{*ctx.inputs[1].contents};
  MEMPLAN_RETURN_IF_ERROR(RejectNegative(ctx, target.dims, "target shape"));
  auto out = BroadcastShapes(data.shape, target);
  if (!out.ok()) return MakeError(NodeError(ctx.node, out.error().message));
  std::optional<std::vector<Dim>> contents;
  if (auto dims = ConstantDims(*out)) contents = BroadcastContents(data, *dims);
  return std::vector<TensorInfo>{MakeOutput(data.dtype, *out, std::move(contents))};
}

Expected<std::vector<TensorInfo>> InferTile(const OpContext& ctx) {
  const TensorInfo& data = ctx.inputs.at(0);
  if (!data.shape.known || !ctx.has_input(1) || !ctx.inputs[1].contents) return Unknown(data.dtype);
  const std::vector<Dim>& repeats = *ctx.inputs[1].contents;
  MEMPLAN_RETURN_IF_ERROR(RejectNegative(ctx, repeats, "repeats"));
  if (repeats.size() != data.shape.rank()) {
    return MakeError(NodeError(ctx.node, "repeats has " + std::to_string(repeats.size()) +
                                             " entries for an input of rank " +
                                             std::to_string(data.shape.rank())));
  }
  Shape out;
  for (size_t i = 0; i < repeats.size(); ++i) out.dims.push_back(data.shape.dims[i] * repeats[i]);
  std::optional<std::vector<Dim>> contents;
  auto reps = ConstantInts(ctx.inputs[1]);
  if (data.contents && data.shape.rank() == 1 && reps && FoldableElementCount(out)) {
    contents.emplace();
    for (int64_t r = 0; r < (*reps)[0]; ++r)
      contents->insert(contents->end(), data.contents->begin(), data.contents->end());
  }
  return std::vector<TensorInfo>{MakeOutput(data.dtype, out, std::move(contents))};
}

// A full view of input 0; `strides`: OpSchema::view_strides (null: input 0's). A Reshape or
// Flatten that cannot view its input copies it, which moves its bytes.
void AddView(OpRegistry& registry, const char* op, ShapeRule rule, const char* saved_source,
             decltype(OpSchema::view_strides) strides, CostRule cost = NoCost,
             bool permutes_axes = false) {
  OpSchema schema = ShapeOpSchema(op);
  schema.permutes_axes = permutes_axes;
  schema.infer_shapes = std::move(rule);
  schema.cost = std::move(cost);
  schema.is_view = true;
  schema.view_strides = std::move(strides);
  schema.saved_source = saved_source;
  registry.Register(std::move(schema));
}

}  // namespace

void RegisterReshapeOps(OpRegistry& registry) {
  AddView(registry, "Reshape", InferReshape,
          "derivatives.yaml: view/_reshape_alias: grad.reshape_symint(self.sym_sizes()), nothing "
          "saved; reshape copies a strided input (TensorShape.cpp: reshape -> clone when "
          "computeStride fails)",
          ReshapeViewStrides, MovementCost);
  AddView(registry, "Flatten", InferFlatten,
          "derivatives.yaml: flatten is a view: grad.reshape(self.sizes()), nothing saved; "
          "flatten reshapes, so an input it cannot view is copied",
          ReshapeViewStrides, MovementCost);
  AddView(registry, "Squeeze", InferSqueeze,
          "derivatives.yaml: squeeze: unsqueeze_to(grad, self.sizes()), nothing saved",
          ReshapeViewStrides);
  AddView(registry, "Unsqueeze", InferUnsqueeze,
          "derivatives.yaml: unsqueeze: grad.squeeze(dim), nothing saved", ReshapeViewStrides);
  AddView(registry, "Transpose", InferTranspose,
          "derivatives.yaml: permute/transpose: grad.permute(inverse), nothing saved",
          TransposeViewStrides, NoCost, /*permutes_axes=*/true);
  AddView(registry, "Expand", InferExpand,
          "derivatives.yaml: expand: at::sum_to(grad, self.sizes()), nothing saved",
          ExpandViewStrides);

  OpSchema tile = ShapeOpSchema("Tile");
  tile.infer_shapes = InferTile;
  tile.cost = MovementCost;
  tile.saved_source = "derivatives.yaml: repeat: repeat_backward(grad, repeats, self.sizes())";
  registry.Register(std::move(tile));
}

}  // namespace memplan
