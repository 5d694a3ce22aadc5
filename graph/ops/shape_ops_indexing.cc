// Ops that select or join parts of tensors: Concat, Split, Slice, Gather, GatherElements,
// ScatterND. On shape tensors they fold symbolically (Gather picks `batch` out of a Shape).

#include <algorithm>
#include <limits>

#include "graph/checked_math.h"
#include "graph/ops/common_rules.h"
#include "graph/ops/shape_helpers.h"
#include "graph/ops/shape_ops_folding.h"
#include "graph/ops/shape_ops_internal.h"
#include "graph/ops/view_layout.h"

namespace memplan {
namespace {

std::vector<TensorInfo> Unknown(DType dtype, size_t outputs = 1) {
  std::vector<TensorInfo> out(outputs);
  for (auto& o : out) o.dtype = dtype;
  return out;
}

int64_t Product(const std::vector<int64_t>& dims, size_t begin, size_t end) {
  int64_t p = 1;
  for (size_t i = begin; i < end; ++i) p *= dims[i];
  return p;
}

Expected<std::vector<TensorInfo>> InferConcat(const OpContext& ctx) {
  DType dtype = ctx.inputs.empty() ? DType::kUndefined : ctx.inputs[0].dtype;
  std::vector<const TensorInfo*> parts;
  for (const auto& in : ctx.inputs) {
    if (!in.present) continue;
    if (!in.shape.known) return Unknown(dtype);
    parts.push_back(&in);
  }
  if (parts.empty()) return Unknown(dtype);
  const size_t rank = parts[0]->shape.rank();
  MEMPLAN_TRY(int64_t axis_i, NormalizeAxis(ctx.attrs().GetInt("axis", 0), rank, ctx.node));
  const size_t axis = static_cast<size_t>(axis_i);
  Shape out = parts[0]->shape;
  out.dims[axis] = Dim(0);
  for (const TensorInfo* p : parts) {
    if (p->shape.rank() != rank) {
      return MakeError(NodeError(ctx.node, "inputs of rank " + std::to_string(rank) + " and " +
                                               std::to_string(p->shape.rank())));
    }
    out.dims[axis] += p->shape.dims[axis];
    // Prefer a constant over a symbol for the other dims: the model implies they are equal.
    for (size_t i = 0; i < rank; ++i)
      if (i != axis && !out.dims[i].is_constant() && p->shape.dims[i].is_constant())
        out.dims[i] = p->shape.dims[i];
  }

  // Contents: blocks of dims[axis] * inner elements, interleaved over the outer dims.
  std::optional<std::vector<Dim>> contents;
  auto out_dims = ConstantDims(out);
  if (out_dims && FoldableElementCount(out)) {
    contents.emplace();
    const int64_t outer = Product(*out_dims, 0, axis);
    for (int64_t o = 0; o < outer && contents; ++o) {
      for (const TensorInfo* p : parts) {
        auto dims = ConstantDims(p->shape);
        if (!p->contents || !dims) {
          contents.reset();
          break;
        }
        const int64_t block = Product(*dims, axis, rank);
        auto first = p->contents->begin() + o * block;
        contents->insert(contents->end(), first, first + block);
      }
    }
  }
  std::vector<TensorInfo> outs{MakeOutput(dtype, out, std::move(contents))};
  // Floating values of a 1-D concat (torch's Resize scales: Concat of two Constants).
  if (rank == 1 && FoldableElementCount(out)) {
    std::vector<double> values;
    for (const TensorInfo* p : parts) {
      if (!p->float_values) return outs;
      values.insert(values.end(), p->float_values->begin(), p->float_values->end());
    }
    outs[0].float_values = std::move(values);
  }
  return outs;
}

Expected<std::vector<TensorInfo>> InferSplit(const OpContext& ctx) {
  const TensorInfo& data = ctx.inputs.at(0);
  const size_t outputs = ctx.node.outputs.size();
  if (!data.shape.known || outputs == 0) return Unknown(data.dtype, outputs);
  MEMPLAN_TRY(int64_t axis_i,
              NormalizeAxis(ctx.attrs().GetInt("axis", 0), data.shape.rank(), ctx.node));
  const size_t axis = static_cast<size_t>(axis_i);
  const Dim& dim = data.shape.dims[axis];

  std::vector<Dim> sizes;
  if (ctx.has_input(1)) {
    if (!ctx.inputs[1].contents) return Unknown(data.dtype, outputs);
    sizes = *ctx.inputs[1].contents;
  } else if (ctx.attrs().Has("split")) {
    sizes = DimsOf(ctx.attrs().GetInts("split"));
  } else {
    // Equal parts; with a constant dim the last part is smaller when it does not divide (opset 18).
    const int64_t n = static_cast<int64_t>(outputs);
    if (auto c = dim.constant_value()) {
      const int64_t chunk = *c / n + (*c % n != 0);  // ceil, without overflowing c + n - 1
      for (int64_t i = 0; i < n; ++i)
        sizes.emplace_back(std::clamp<int64_t>(*c - i * chunk, 0, chunk));
    } else if (auto part = dim.DivideExactly(Dim(n))) {
      sizes.assign(outputs, *part);
    } else {
      if (!ctx.symbols) return Unknown(data.dtype, outputs);
      Dim part_dim = Dim::Symbol(ctx.symbols->Fresh("split"));
      sizes.assign(outputs, part_dim);
    }
  }
  if (sizes.size() != outputs) {
    return MakeError(NodeError(ctx.node, std::to_string(sizes.size()) + " split sizes for " +
                                             std::to_string(outputs) + " outputs"));
  }
  Dim total(0);
  for (const Dim& s : sizes) total += s;
  if (auto t = total.constant_value(), d = dim.constant_value(); t && d && *t != *d) {
    return MakeError(NodeError(ctx.node, "split sizes add up to " + std::to_string(*t) +
                                             ", not the axis size " + std::to_string(*d)));
  }

  std::vector<TensorInfo> out;
  auto values = data.shape.rank() == 1 ? data.contents : std::nullopt;
  int64_t offset = 0;
  for (const Dim& s : sizes) {
    Shape shape = data.shape;
    shape.dims[axis] = s;
    std::optional<std::vector<Dim>> contents;
    auto len = s.constant_value();
    if (values && len && offset + *len <= static_cast<int64_t>(values->size())) {
      contents.emplace(values->begin() + offset, values->begin() + offset + *len);
    }
    offset += len.value_or(0);
    out.push_back(MakeOutput(data.dtype, shape, std::move(contents)));
  }
  return out;
}

// Exporters write "to the end" as INT64_MAX (or INT_MAX) and "from the start" of a reversed
// slice as INT64_MIN; any bound this large means "past the edge", whatever the dim.
constexpr int64_t kPastTheEdge = std::numeric_limits<int32_t>::max();

struct SliceAxis {
  Dim length;
  std::optional<int64_t> first;  // index of the first element, when constant
};

// The sliced length of one axis. Symbolic bounds (`mask[:T]`, T = seq) are taken as in range.
std::optional<SliceAxis> SliceOneAxis(const Dim& dim, const Dim& start, const Dim& end,
                                      int64_t step, SymbolTable* symbols) {
  auto d = dim.constant_value();
  auto s = start.constant_value();
  auto e = end.constant_value();
  if (d && s && e) {
    // ONNX Slice on a known dim, exactly as the spec clamps.
    int64_t lo = *s < 0 ? *s + *d : *s;
    int64_t hi = *e < 0 ? *e + *d : *e;
    if (step > 0) {
      lo = std::clamp<int64_t>(lo, 0, *d);
      hi = std::clamp<int64_t>(hi, 0, *d);
      int64_t n = hi > lo ? (hi - lo - 1) / step + 1 : 0;
      return SliceAxis{Dim(n), lo};
    }
    lo = std::clamp<int64_t>(lo, 0, *d - 1);
    hi = std::clamp<int64_t>(hi, -1, *d - 1);
    int64_t n = lo > hi ? (lo - hi - 1) / -step + 1 : 0;
    return SliceAxis{Dim(n), lo};
  }
  auto resolve = [&](const Dim& bound, std::optional<int64_t> c) -> Dim {
    if (!c) return bound;  // symbolic: in range
    if (*c >= kPastTheEdge) return dim;
    if (*c <= -kPastTheEdge) return Dim(0);
    if (*c < 0) return dim + Dim(*c);
    if (d) return Dim(std::min(*c, *d));
    return Dim(*c);
  };
  std::optional<Dim> length;
  if (step > 0) {
    Dim span = resolve(end, e) - resolve(start, s);
    if (auto c = span.constant_value()) span = Dim(std::max<int64_t>(*c, 0));
    if (step == 1) {
      length = span;
    } else if (auto c = span.constant_value()) {
      length = Dim(*c > 0 ? (*c - 1) / step + 1 : 0);
    } else {
      length = span.DivideExactly(Dim(step));
    }
  } else if (step == -1 && s && e && (*s == -1 || *s >= kPastTheEdge) && *e <= -kPastTheEdge) {
    length = dim;  // x.flip(): the whole axis reversed
  }
  if (!length) {
    if (!symbols) return std::nullopt;
    length = Dim::Symbol(symbols->Fresh("slice"));
  }
  return SliceAxis{*length, std::nullopt};
}

Expected<std::vector<TensorInfo>> InferSlice(const OpContext& ctx) {
  const TensorInfo& data = ctx.inputs.at(0);
  if (!data.shape.known) return Unknown(data.dtype);
  const size_t rank = data.shape.rank();
  std::vector<Dim> starts, ends;
  std::vector<int64_t> axes, steps;
  if (ctx.inputs.size() >= 3) {
    // Opset >= 10: starts, ends, axes, steps are inputs.
    if (!ctx.inputs[1].contents || !ctx.inputs[2].contents) return Unknown(data.dtype);
    starts = *ctx.inputs[1].contents;
    ends = *ctx.inputs[2].contents;
    auto a = IntsFromInputOrAttribute(ctx, 3, "", {});
    auto st = IntsFromInputOrAttribute(ctx, 4, "", {});
    if (!a || !st) return Unknown(data.dtype);
    axes = *a;
    steps = *st;
  } else {
    starts = DimsOf(ctx.attrs().GetInts("starts"));
    ends = DimsOf(ctx.attrs().GetInts("ends"));
    axes = ctx.attrs().GetInts("axes");
  }
  if (axes.empty())
    for (size_t i = 0; i < starts.size(); ++i) axes.push_back(static_cast<int64_t>(i));
  if (steps.empty()) steps.assign(starts.size(), 1);
  if (starts.size() != ends.size() || starts.size() != axes.size() ||
      starts.size() != steps.size()) {
    return MakeError(NodeError(ctx.node, "starts, ends, axes and steps differ in length"));
  }

  Shape out = data.shape;
  std::vector<std::optional<int64_t>> first(rank, int64_t{0});
  std::vector<int64_t> stride(rank, 1);
  for (size_t i = 0; i < axes.size(); ++i) {
    MEMPLAN_TRY(int64_t axis_i, NormalizeAxis(axes[i], rank, ctx.node));
    const size_t axis = static_cast<size_t>(axis_i);
    // INT64_MIN has no positive counterpart; no exporter writes it as a step.
    if (steps[i] == 0 || steps[i] == std::numeric_limits<int64_t>::min())
      return MakeError(NodeError(ctx.node, "invalid step " + std::to_string(steps[i])));
    auto sliced = SliceOneAxis(data.shape.dims[axis], starts[i], ends[i], steps[i], ctx.symbols);
    if (!sliced) return Unknown(data.dtype);
    out.dims[axis] = sliced->length;
    first[axis] = sliced->first;
    stride[axis] = steps[i];
  }

  // Contents of a sliced shape tensor (a vector, or F.pad's [n, 2] pads table flipped).
  std::optional<std::vector<Dim>> contents;
  auto out_dims = ConstantDims(out);
  const bool firsts_known =
      std::all_of(first.begin(), first.end(), [](const auto& f) { return f.has_value(); });
  if (data.contents && out_dims && firsts_known) {
    std::vector<int64_t> identity(rank), starts_at(rank);
    for (size_t a = 0; a < rank; ++a) {
      identity[a] = static_cast<int64_t>(a);
      starts_at[a] = *first[a];
    }
    contents = StridedContents(data, *out_dims, identity, starts_at, stride);
  }
  return std::vector<TensorInfo>{MakeOutput(data.dtype, out, std::move(contents))};
}

Expected<std::vector<TensorInfo>> InferGather(const OpContext& ctx) {
  const TensorInfo& data = ctx.inputs.at(0);
  const TensorInfo& indices = ctx.inputs.at(1);
  if (!data.shape.known || !indices.shape.known) return Unknown(data.dtype);
  const size_t rank = data.shape.rank();
  MEMPLAN_TRY(int64_t axis_i, NormalizeAxis(ctx.attrs().GetInt("axis", 0), rank, ctx.node));
  const size_t axis = static_cast<size_t>(axis_i);
  Shape out;
  for (size_t i = 0; i < axis; ++i) out.dims.push_back(data.shape.dims[i]);
  for (const Dim& d : indices.shape.dims) out.dims.push_back(d);
  for (size_t i = axis + 1; i < rank; ++i) out.dims.push_back(data.shape.dims[i]);

  // Contents: out[o, j, i] = data[o, idx[j], i] over constant shapes.
  std::optional<std::vector<Dim>> contents;
  auto data_dims = ConstantDims(data.shape);
  auto idx = ConstantInts(indices);
  if (data.contents && data_dims && idx && FoldableElementCount(out)) {
    const int64_t outer = Product(*data_dims, 0, axis);
    const int64_t axis_dim = (*data_dims)[axis];
    const int64_t inner = Product(*data_dims, axis + 1, rank);
    contents.emplace();
    for (int64_t o = 0; o < outer; ++o) {
      for (int64_t j : *idx) {
        if (j < -axis_dim || j >= axis_dim) {
          return MakeError(NodeError(ctx.node, "index " + std::to_string(j) +
                                                   " is out of range for an axis of size " +
                                                   std::to_string(axis_dim)));
        }
        if (j < 0) j += axis_dim;
        for (int64_t i = 0; i < inner; ++i) {
          contents->push_back(
              (*data.contents)[static_cast<size_t>((o * axis_dim + j) * inner + i)]);
        }
      }
    }
  }
  return std::vector<TensorInfo>{MakeOutput(data.dtype, out, std::move(contents))};
}

Expected<std::vector<TensorInfo>> InferGatherElements(const OpContext& ctx) {
  return SingleOutput(ctx.inputs.at(0).dtype, ctx.inputs.at(1).shape);
}

// GatherND (the dynamo exporter's aten.index.Tensor with several index tensors, x[i, j]):
// indices [..., k] address slices of data's trailing dims after `batch_dims` shared leading
// ones, so the output is indices.shape[:-1] + data.shape[batch_dims + k:].
Expected<std::vector<TensorInfo>> InferGatherND(const OpContext& ctx) {
  const TensorInfo& data = ctx.inputs.at(0);
  const TensorInfo& indices = ctx.inputs.at(1);
  if (!data.shape.known || !indices.shape.known) return Unknown(data.dtype);
  const int64_t batch_dims = ctx.attrs().GetInt("batch_dims", 0);
  const size_t r = data.shape.rank();
  const size_t q = indices.shape.rank();
  if (q < 1 || r < 1) return MakeError(NodeError(ctx.node, "data and indices must have rank >= 1"));
  const std::optional<int64_t> k = indices.shape.dims.back().constant_value();
  if (!k) return Unknown(data.dtype);  // the index depth decides the rank
  if (batch_dims < 0 || static_cast<size_t>(batch_dims) >= std::min(q, r) || *k < 1 ||
      static_cast<size_t>(batch_dims + *k) > r)
    return MakeError(NodeError(ctx.node, "batch_dims " + std::to_string(batch_dims) +
                                             " and index rows of " + std::to_string(*k) +
                                             " do not fit data of rank " + std::to_string(r) +
                                             " and indices of rank " + std::to_string(q)));
  Shape out;
  for (size_t i = 0; i + 1 < q; ++i) out.dims.push_back(indices.shape.dims[i]);
  for (size_t i = static_cast<size_t>(batch_dims + *k); i < r; ++i)
    out.dims.push_back(data.shape.dims[i]);
  return SingleOutput(data.dtype, out);
}

Expected<std::vector<TensorInfo>> InferScatterND(const OpContext& ctx) {
  return SingleOutput(ctx.inputs.at(0).dtype, ctx.inputs.at(0).shape);
}

std::vector<SavedTensor> SavesIndices(const OpContext&) {
  return {SavedTensor{SavedTensor::Source::kInput, /*index=*/1}};
}

// Indices the exporter computed from shapes alone (a constant at import) that stand for a view or
// a slice write torch keeps no index for, by the lowering each exporter writes:
// * Gather of a rank-1 activation: symbolic_opset9.as_strided flattens `self` (Reshape to [-1])
//   and gathers it at arange-built offsets; torch's as_strided is a view whose backward
//   (as_strided_backward) keeps sizes and strides only. Longformer's chunked attention.
// * ScatterND: a slice assignment `x[:, :3, w:] = v` is copy_ into a view (CopySlices, nothing
//   saved); the TorchScript exporter's ConvertSliceToIndex pass and the dynamo exporter's
//   slice_scatter write it as ScatterND at arange-built indices.
// A user's index_put at indices computed in forward from aranges would keep them in torch; the
// lowering and the model read the same, so memplan follows the exporters' common case.
bool IndicesComputedFromShapes(const OpContext& ctx) {
  return ctx.has_input(1) && ctx.inputs[1].kind == ValueKind::kConstant;
}

std::vector<SavedTensor> GatherSavedIndices(const OpContext& ctx) {
  const TensorInfo& data = ctx.inputs.at(0);
  const bool strided_view = data.kind == ValueKind::kIntermediate && data.shape.known &&
                            data.shape.rank() == 1 && IndicesComputedFromShapes(ctx);
  if (strided_view) return {};
  return SavesIndices(ctx);
}

std::vector<SavedTensor> ScatterNDSavedIndices(const OpContext& ctx) {
  if (IndicesComputedFromShapes(ctx)) return {};
  return SavesIndices(ctx);
}

void Add(OpRegistry& registry, const char* op, ShapeRule rule, const char* saved_source,
         SavedRule saved = {}) {
  OpSchema schema = ShapeOpSchema(op);
  schema.infer_shapes = std::move(rule);
  schema.cost = MovementCost;
  schema.saved_source = saved_source;
  schema.saved_for_backward = std::move(saved);
  registry.Register(std::move(schema));
}

// torch.split returns views: a consumer that saves one chunk keeps the whole input alive
// (ShuffleNetV2's channel split saves half of each block's input and retains all of it), and
// the split itself moves no bytes.
void AddPartialView(OpRegistry& registry, const char* op, ShapeRule rule,
                    const char* saved_source) {
  OpSchema schema = ShapeOpSchema(op);
  schema.infer_shapes = std::move(rule);
  schema.cost = MovementCost;  // only when it copies: a backward-stepping Slice (torch.flip)
  schema.is_view = true;
  schema.view_is_partial = true;
  schema.view_strides = NarrowViewStrides;
  schema.saved_source = saved_source;
  registry.Register(std::move(schema));
}

// Gather gathers rows into a new tensor (embedding, index_select), except with one constant
// scalar index: then it is torch's select, a partial view (ViT's class token x[:, 0]: the head
// that saves it keeps the whole [B, S, E] encoder output alive, as torch's does).
void AddGather(OpRegistry& registry) {
  OpSchema schema = ShapeOpSchema("Gather");
  schema.infer_shapes = InferGather;
  schema.cost = MovementCost;
  schema.saved_for_backward = GatherSavedIndices;
  schema.row_index_input = 1;
  schema.is_view = true;
  schema.view_is_partial = true;
  schema.view_applies = GatherSelectsOne;
  schema.view_strides = SelectViewStrides;
  schema.saved_source =
      "derivatives.yaml: embedding / index_select: backward takes `indices` (saved); select: "
      "select_backward(grad, self.sizes(), dim, index), nothing saved, a view of the input; "
      "as_strided (a flat activation at offsets computed from shapes): sizes and strides only";
  registry.Register(std::move(schema));
}

}  // namespace

void RegisterIndexingOps(OpRegistry& registry) {
  Add(registry, "Concat", InferConcat,
      "derivatives.yaml: cat: cat_tensors_backward(grad, sizes, dtypes, dim), nothing saved");
  AddPartialView(registry, "Split", InferSplit,
                 "derivatives.yaml: split/split_with_sizes: split_backward(grads, sizes, dim), "
                 "nothing saved; the chunks are views of the input");
  // torch's slice is a view (torch.onnx writes chunk as Slices: ShuffleNetV2's channel split); a
  // reshape of a strided one copies it (nn.MultiheadAttention's packed q/k/v chunks).
  AddPartialView(registry, "Slice", InferSlice,
                 "derivatives.yaml: slice: slice_backward_wrapper(grad, self.sizes(), ...), "
                 "nothing saved; the slice is a view of the input");
  AddGather(registry);
  Add(registry, "GatherElements", InferGatherElements,
      "derivatives.yaml: gather: gather_backward(grad, self, dim, index) saves index",
      SavesIndices);
  Add(registry, "GatherND", InferGatherND,
      "derivatives.yaml: index.Tensor: index_backward(zeros_like(self), indices, grad) saves "
      "indices",
      SavesIndices);
  Add(registry, "ScatterND", InferScatterND,
      "derivatives.yaml: index_put: values: grad.index(indices) saves indices; a slice write "
      "at indices computed from shapes is copy_ into a view (CopySlices), nothing saved",
      ScatterNDSavedIndices);
}

}  // namespace memplan
