// Ops that rearrange a tensor without computing on it: Reshape, Flatten, Squeeze, Unsqueeze,
// Transpose, Expand (all views in PyTorch) and Tile (a copy).

#include <algorithm>
#include <set>

#include "graph/ops/shape_helpers.h"
#include "graph/ops/shape_ops_folding.h"
#include "graph/ops/shape_ops_internal.h"

namespace memplan {
namespace {

std::vector<TensorInfo> Unknown(DType dtype) { return SingleOutput(dtype, Shape::Unknown()); }

std::string ShapeText(const Shape& shape) {
  std::string out = "[";
  for (size_t i = 0; i < shape.rank(); ++i) {
    auto c = shape.dims[i].constant_value();
    out += (i ? ", " : "") + (c ? std::to_string(*c) : std::string("?"));
  }
  return out + "]";
}

Status RejectNegative(const OpContext& ctx, const std::vector<Dim>& dims, const char* what) {
  for (const Dim& d : dims) {
    if (auto c = d.constant_value(); c && *c < 0) {
      return MakeError(
          NodeError(ctx.node, std::string("negative value ") + std::to_string(*c) + " in " + what));
    }
  }
  return OkStatus();
}

Expected<std::vector<TensorInfo>> InferReshape(const OpContext& ctx) {
  const TensorInfo& data = ctx.inputs.at(0);
  const bool allow_zero = ctx.attrs().GetInt("allowzero", 0) != 0;
  if (!ctx.has_input(1) || !ctx.inputs[1].contents) return Unknown(data.dtype);
  const std::vector<Dim>& target = *ctx.inputs[1].contents;

  Shape out;
  out.dims.resize(target.size());
  std::optional<size_t> inferred;  // the -1 slot
  Dim known_product(1);
  for (size_t i = 0; i < target.size(); ++i) {
    auto c = target[i].constant_value();
    if (c && *c == -1) {
      if (inferred) return MakeError(NodeError(ctx.node, "more than one -1 in the target shape"));
      inferred = i;
      continue;
    }
    if (c && *c < -1) {
      return MakeError(NodeError(ctx.node, "invalid dim " + std::to_string(*c) + " in target"));
    }
    if (c && *c == 0 && !allow_zero) {
      // 0 copies the input's dim at the same index.
      if (!data.shape.known) return Unknown(data.dtype);
      if (i >= data.shape.rank()) {
        return MakeError(NodeError(ctx.node, "target dim " + std::to_string(i) +
                                                 " is 0 but the input has rank " +
                                                 std::to_string(data.shape.rank())));
      }
      out.dims[i] = data.shape.dims[i];
    } else {
      out.dims[i] = target[i];
    }
    known_product *= out.dims[i];
  }
  if (inferred) {
    std::optional<Dim> rest;
    if (data.shape.known) rest = data.shape.NumElements().DivideExactly(known_product);
    if (!rest) {
      // Not exact (or the input is unknown): a fresh symbol keeps the rank and the other dims.
      if (!ctx.symbols) return Unknown(data.dtype);
      rest = Dim::Symbol(ctx.symbols->Fresh("reshape"));
    }
    out.dims[*inferred] = *rest;
  } else if (data.shape.known) {
    auto in_count = data.shape.NumElements().constant_value();
    auto out_count = out.NumElements().constant_value();
    if (in_count && out_count && *in_count != *out_count) {
      return MakeError(NodeError(ctx.node, "cannot reshape " + ShapeText(data.shape) + " (" +
                                               std::to_string(*in_count) + " elements) to " +
                                               ShapeText(out)));
    }
  }
  return std::vector<TensorInfo>{MakeOutput(data.dtype, out, data.contents)};
}

Expected<std::vector<TensorInfo>> InferFlatten(const OpContext& ctx) {
  const TensorInfo& data = ctx.inputs.at(0);
  if (!data.shape.known) return Unknown(data.dtype);
  const int64_t rank = static_cast<int64_t>(data.shape.rank());
  int64_t axis = ctx.attrs().GetInt("axis", 1);
  if (axis < 0) axis += rank;
  if (axis < 0 || axis > rank) {
    return MakeError(NodeError(ctx.node, "axis " + std::to_string(ctx.attrs().GetInt("axis", 1)) +
                                             " is out of range for rank " + std::to_string(rank)));
  }
  Dim outer(1), inner(1);
  for (int64_t i = 0; i < rank; ++i)
    (i < axis ? outer : inner) *= data.shape.dims[static_cast<size_t>(i)];
  return std::vector<TensorInfo>{MakeOutput(data.dtype, Shape{{outer, inner}}, data.contents)};
}

// Normalised, sorted, de-duplicated axes against `rank`.
Expected<std::set<int64_t>> NormalizeAxes(const std::vector<int64_t>& axes, size_t rank,
                                          const Node& node) {
  std::set<int64_t> out;
  for (int64_t a : axes) {
    MEMPLAN_TRY(int64_t n, NormalizeAxis(a, rank, node));
    if (!out.insert(n).second)
      return MakeError(NodeError(node, "axis " + std::to_string(a) + " is repeated"));
  }
  return out;
}

Expected<std::vector<TensorInfo>> InferSqueeze(const OpContext& ctx) {
  const TensorInfo& data = ctx.inputs.at(0);
  if (!data.shape.known) return Unknown(data.dtype);
  auto axes = IntsFromInputOrAttribute(ctx, 1, "axes", {});
  if (!axes) return Unknown(data.dtype);
  std::set<int64_t> drop;
  if (axes->empty()) {
    // No axes: every dim known to be 1 goes (a symbol is assumed not to be 1).
    for (size_t i = 0; i < data.shape.rank(); ++i)
      if (data.shape.dims[i].constant_value() == 1) drop.insert(static_cast<int64_t>(i));
  } else {
    MEMPLAN_TRY(drop, NormalizeAxes(*axes, data.shape.rank(), ctx.node));
  }
  Shape out;
  for (size_t i = 0; i < data.shape.rank(); ++i) {
    if (!drop.count(static_cast<int64_t>(i))) {
      out.dims.push_back(data.shape.dims[i]);
    } else if (auto c = data.shape.dims[i].constant_value(); c && *c != 1) {
      return MakeError(NodeError(
          ctx.node, "cannot squeeze axis " + std::to_string(i) + " of size " + std::to_string(*c)));
    }
  }
  return std::vector<TensorInfo>{MakeOutput(data.dtype, out, data.contents)};
}

Expected<std::vector<TensorInfo>> InferUnsqueeze(const OpContext& ctx) {
  const TensorInfo& data = ctx.inputs.at(0);
  if (!data.shape.known) return Unknown(data.dtype);
  auto axes = IntsFromInputOrAttribute(ctx, 1, "axes", {});
  if (!axes) return Unknown(data.dtype);
  const size_t out_rank = data.shape.rank() + axes->size();
  MEMPLAN_TRY(std::set<int64_t> inserted, NormalizeAxes(*axes, out_rank, ctx.node));
  Shape out;
  size_t next = 0;
  for (size_t i = 0; i < out_rank; ++i) {
    if (inserted.count(static_cast<int64_t>(i))) {
      out.dims.emplace_back(1);
    } else {
      out.dims.push_back(data.shape.dims.at(next++));
    }
  }
  return std::vector<TensorInfo>{MakeOutput(data.dtype, out, data.contents)};
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
  // Row-major order is unchanged only for rank <= 1.
  return std::vector<TensorInfo>{
      MakeOutput(data.dtype, out, rank <= 1 ? data.contents : std::nullopt)};
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
  auto reps = ConstantContents(ctx.inputs[1]);
  if (data.contents && data.shape.rank() == 1 && reps && FoldableElementCount(out)) {
    contents.emplace();
    for (int64_t r = 0; r < (*reps)[0]; ++r)
      contents->insert(contents->end(), data.contents->begin(), data.contents->end());
  }
  return std::vector<TensorInfo>{MakeOutput(data.dtype, out, std::move(contents))};
}

void AddView(OpRegistry& registry, const char* op, ShapeRule rule, const char* saved_source) {
  OpSchema schema = ShapeOpSchema(op);
  schema.infer_shapes = std::move(rule);
  schema.cost = NoCost;
  schema.is_view = true;
  schema.saved_source = saved_source;
  registry.Register(std::move(schema));
}

}  // namespace

void RegisterReshapeOps(OpRegistry& registry) {
  AddView(registry, "Reshape", InferReshape,
          "derivatives.yaml: view/_reshape_alias: grad.reshape_symint(self.sym_sizes()), nothing "
          "saved");
  AddView(registry, "Flatten", InferFlatten,
          "derivatives.yaml: flatten is a view: grad.reshape(self.sizes()), nothing saved");
  AddView(registry, "Squeeze", InferSqueeze,
          "derivatives.yaml: squeeze: unsqueeze_to(grad, self.sizes()), nothing saved");
  AddView(registry, "Unsqueeze", InferUnsqueeze,
          "derivatives.yaml: unsqueeze: grad.squeeze(dim), nothing saved");
  AddView(registry, "Transpose", InferTranspose,
          "derivatives.yaml: permute/transpose: grad.permute(inverse), nothing saved");
  AddView(registry, "Expand", InferExpand,
          "derivatives.yaml: expand: at::sum_to(grad, self.sizes()), nothing saved");

  OpSchema tile = ShapeOpSchema("Tile");
  tile.infer_shapes = InferTile;
  tile.cost = MovementCost;
  tile.saved_source = "derivatives.yaml: repeat: repeat_backward(grad, repeats, self.sizes())";
  registry.Register(std::move(tile));
}

}  // namespace memplan
