// Ops that describe or create tensors rather than transform them: Shape, Size, Constant,
// ConstantOfShape, Range, NonZero; and the dtype/identity pass-throughs Cast, CastLike, Identity.

#include <algorithm>
#include <cmath>
#include <limits>

#include "graph/checked_math.h"
#include "graph/ops/shape_helpers.h"
#include "graph/ops/shape_ops_folding.h"
#include "graph/ops/shape_ops_internal.h"

namespace memplan {
namespace {

Expected<std::vector<TensorInfo>> InferShape(const OpContext& ctx) {
  const Shape& in = ctx.inputs.at(0).shape;
  if (!in.known) return std::vector<TensorInfo>{MakeOutput(DType::kInt64, Shape::Unknown())};
  // Opset 15 start/end: negative counts from the back, both clamped to [0, rank].
  const int64_t rank = static_cast<int64_t>(in.rank());
  auto clamp = [rank](int64_t v) { return std::clamp(v < 0 ? v + rank : v, int64_t{0}, rank); };
  int64_t start = clamp(ctx.attrs().GetInt("start", 0));
  int64_t end = clamp(ctx.attrs().GetInt("end", rank));
  std::vector<Dim> dims;
  for (int64_t i = start; i < end; ++i) dims.push_back(in.dims[static_cast<size_t>(i)]);
  Shape out{{Dim(static_cast<int64_t>(dims.size()))}};
  return std::vector<TensorInfo>{MakeOutput(DType::kInt64, out, std::move(dims))};
}

Expected<std::vector<TensorInfo>> InferSize(const OpContext& ctx) {
  const Shape& in = ctx.inputs.at(0).shape;
  if (!in.known) return std::vector<TensorInfo>{MakeOutput(DType::kInt64, Shape{})};
  return std::vector<TensorInfo>{
      MakeOutput(DType::kInt64, Shape{}, std::vector<Dim>{in.NumElements()})};
}

Expected<std::vector<TensorInfo>> InferConstant(const OpContext& ctx) {
  const Attributes& a = ctx.attrs();
  if (const TensorAttribute* t = a.GetTensor("value")) {
    Shape shape;
    for (int64_t d : t->dims) shape.dims.emplace_back(d);
    std::optional<std::vector<Dim>> contents;
    auto count = FoldableElementCount(shape);
    if (count && static_cast<int64_t>(t->int_values.size()) == *count)
      contents = DimsOf(t->int_values);
    std::vector<TensorInfo> out{MakeOutput(t->dtype, shape, std::move(contents))};
    if (count && IsFloating(t->dtype) && static_cast<int64_t>(t->float_values.size()) == *count)
      out[0].float_values = t->float_values;
    return out;
  }
  if (a.Has("value_int")) {
    return std::vector<TensorInfo>{
        MakeOutput(DType::kInt64, Shape{}, std::vector<Dim>{Dim(a.GetInt("value_int", 0))})};
  }
  if (a.Has("value_ints")) {
    auto ints = a.GetInts("value_ints");
    Shape shape{{Dim(static_cast<int64_t>(ints.size()))}};
    return std::vector<TensorInfo>{MakeOutput(DType::kInt64, shape, DimsOf(ints))};
  }
  if (a.Has("value_float")) return SingleOutput(DType::kFloat32, Shape{});
  if (a.Has("value_floats")) {
    return SingleOutput(DType::kFloat32,
                        Shape{{Dim(static_cast<int64_t>(a.GetFloats("value_floats").size()))}});
  }
  if (a.Has("value_string")) return SingleOutput(DType::kString, Shape{});
  return SingleOutput(DType::kUndefined, Shape::Unknown());  // sparse_value, value_strings
}

Expected<std::vector<TensorInfo>> InferConstantOfShape(const OpContext& ctx) {
  const TensorAttribute* value = ctx.attrs().GetTensor("value");
  DType dtype = value ? value->dtype : DType::kFloat32;
  const auto& target = ctx.inputs.at(0).contents;
  if (!target) return SingleOutput(dtype, Shape::Unknown());
  Shape shape{*target};
  for (const Dim& d : shape.dims) {
    if (auto c = d.constant_value(); c && *c < 0)
      return MakeError(NodeError(ctx.node, "negative dim " + std::to_string(*c) + " in shape"));
  }
  std::optional<std::vector<Dim>> contents;
  if (auto count = FoldableElementCount(shape); count && IsFoldableDType(dtype)) {
    int64_t fill = value && !value->int_values.empty() ? value->int_values[0] : 0;
    contents = std::vector<Dim>(static_cast<size_t>(*count), Dim(fill));
  }
  return std::vector<TensorInfo>{MakeOutput(dtype, shape, std::move(contents))};
}

// ceil((limit - start) / delta) clamped at 0, per the ONNX Range definition.
std::optional<int64_t> RangeLength(int64_t start, int64_t limit, int64_t delta) {
  auto span = CheckedSub(limit, start);
  if (!span || delta == 0 || (delta == -1 && *span == std::numeric_limits<int64_t>::min()))
    return std::nullopt;
  int64_t q = *span / delta;
  if (*span % delta != 0 && ((*span < 0) == (delta < 0))) ++q;
  return std::max<int64_t>(q, 0);
}

Expected<std::vector<TensorInfo>> InferRange(const OpContext& ctx) {
  DType dtype = ctx.inputs.at(0).dtype;
  auto scalar = [&](size_t i) -> std::optional<Dim> {
    if (!ctx.has_input(i) || !ctx.inputs[i].contents || ctx.inputs[i].contents->size() != 1)
      return std::nullopt;
    return ctx.inputs[i].contents->front();
  };
  auto start = scalar(0), limit = scalar(1), delta = scalar(2);
  auto fresh = [&]() {
    Dim n = ctx.symbols ? Dim::Symbol(ctx.symbols->Fresh("range")) : Dim();
    return ctx.symbols ? SingleOutput(dtype, Shape{{n}}) : SingleOutput(dtype, Shape::Unknown());
  };
  if (!start || !limit || !delta) return fresh();
  auto s = start->constant_value(), l = limit->constant_value(), d = delta->constant_value();
  if (d && *d == 0) return MakeError(NodeError(ctx.node, "delta is 0"));
  if (s && l && d) {
    auto n = RangeLength(*s, *l, *d);
    if (!n) return MakeError(NodeError(ctx.node, "length overflows 64 bits"));
    std::optional<std::vector<Dim>> contents;
    if (*n <= kMaxFoldedElements) {
      contents.emplace();
      for (int64_t i = 0; i < *n; ++i) contents->emplace_back(*s + i * *d);
    }
    return std::vector<TensorInfo>{MakeOutput(dtype, Shape{{Dim(*n)}}, std::move(contents))};
  }
  // torch.arange(0, seq): the length is the symbolic span when delta is 1 (or divides it).
  Dim span = *limit - *start;
  if (d && *d == 1) return SingleOutput(dtype, Shape{{span}});
  if (d && *d > 0) {
    if (auto n = span.DivideExactly(Dim(*d))) return SingleOutput(dtype, Shape{{*n}});
  }
  return fresh();
}

// Whether each element of a tensor known at import is non-zero (integer contents or floating
// values); nullopt when the values are not known or a symbolic element's sign is not.
std::optional<std::vector<bool>> KnownNonZeros(const TensorInfo& in) {
  std::vector<bool> out;
  if (in.contents) {
    for (const Dim& d : *in.contents) {
      auto is_zero = DimsEqual(d, Dim(0));
      if (!is_zero) return std::nullopt;
      out.push_back(!*is_zero);
    }
    return out;
  }
  if (!in.float_values) return std::nullopt;
  for (double v : *in.float_values) out.push_back(v != 0.0);
  return out;
}

// [rank, number of non-zeros]. With the input's values known at import (the TorchScript
// exporter's opset-9 arange is NonZero(ConstantOfShape(n, 1)), as_strided's index in Longformer's
// chunked attention) the count and the indices are exact. Otherwise the count depends on data the
// plan does not see: it is planned at its upper bound, every element non-zero (the input's element
// count), which is also exact for a constant non-zero fill too long to fold; the importer warns
// about the rest (graph/data_dependent_counts.h).
Expected<std::vector<TensorInfo>> InferNonZero(const OpContext& ctx) {
  const TensorInfo& in = ctx.inputs.at(0);
  if (!in.shape.known) return SingleOutput(DType::kInt64, Shape::Unknown());
  const int64_t rank = static_cast<int64_t>(in.shape.rank());
  const auto non_zeros = KnownNonZeros(in);
  const auto dims = ConstantDims(in.shape);
  const auto elements = FoldableElementCount(in.shape);
  if (!non_zeros || !dims || !elements || static_cast<int64_t>(non_zeros->size()) != *elements)
    return SingleOutput(DType::kInt64, Shape{{Dim(rank), in.shape.NumElements()}});
  // Row r of the output lists axis r's coordinate of each non-zero element, in row-major order.
  std::vector<std::vector<int64_t>> rows(static_cast<size_t>(rank));
  for (size_t flat = 0; flat < non_zeros->size(); ++flat) {
    if (!(*non_zeros)[flat]) continue;
    int64_t rest = static_cast<int64_t>(flat);
    for (int64_t axis = rank - 1; axis >= 0; --axis) {
      const int64_t extent = (*dims)[static_cast<size_t>(axis)];
      rows[static_cast<size_t>(axis)].push_back(rest % extent);
      rest /= extent;
    }
  }
  const auto count = static_cast<int64_t>(std::count(non_zeros->begin(), non_zeros->end(), true));
  std::optional<std::vector<Dim>> contents;
  if (rank * count <= kMaxFoldedElements) {
    contents.emplace();
    for (const auto& row : rows)
      for (int64_t coordinate : row) contents->emplace_back(coordinate);
  }
  return std::vector<TensorInfo>{
      MakeOutput(DType::kInt64, Shape{{Dim(rank), Dim(count)}}, std::move(contents))};
}

// Casts keep integer contents; to bool they become 0/1 (positive symbols are non-zero); to a
// floating type they are dropped, since float arithmetic on them is not integer arithmetic.
std::optional<std::vector<Dim>> CastContents(const TensorInfo& in, DType to) {
  // A floating constant known at import cast to an integer type truncates toward zero, as ONNX's
  // Cast (and Python's int()) do: int(num_positions ** 0.5) sizes DINOv2's position table.
  if (!in.contents && in.float_values && IsInteger(to)) {
    std::vector<Dim> out;
    for (double v : *in.float_values) {
      if (!std::isfinite(v) || std::fabs(v) > 9.0e18) return std::nullopt;
      out.emplace_back(static_cast<int64_t>(std::trunc(v)));
    }
    return out;
  }
  if (!in.contents || !IsFoldableDType(to)) return std::nullopt;
  if (to != DType::kBool) return in.contents;
  std::vector<Dim> out;
  for (const Dim& d : *in.contents) {
    auto is_zero = DimsEqual(d, Dim(0));
    if (!is_zero) return std::nullopt;
    out.emplace_back(*is_zero ? 0 : 1);
  }
  return out;
}

// The values of a cast to a floating type known at import: integer contents that are all
// constants (a feature map's height from Shape, Gather, cast to float for Python-float shape
// arithmetic: MobileViT's math.ceil(h / p) * p, traced with a symbolic batch) or floating values
// already known, in the target's precision.
std::optional<std::vector<double>> CastFloatValues(const TensorInfo& in, DType to) {
  if (!IsFloating(to)) return std::nullopt;
  auto rounded = [to](double v) {
    return to == DType::kFloat64 ? v : static_cast<double>(static_cast<float>(v));
  };
  std::vector<double> out;
  if (in.contents) {
    for (const Dim& d : *in.contents) {
      auto v = d.constant_value();
      if (!v) return std::nullopt;
      out.push_back(rounded(static_cast<double>(*v)));
    }
    return out;
  }
  if (!in.float_values) return std::nullopt;
  for (double v : *in.float_values) out.push_back(rounded(v));
  return out;
}

std::vector<TensorInfo> CastOutput(const TensorInfo& in, DType to) {
  TensorInfo out = MakeOutput(to, in.shape, CastContents(in, to));
  out.float_values = CastFloatValues(in, to);
  return {out};
}

Expected<std::vector<TensorInfo>> InferCast(const OpContext& ctx) {
  const TensorInfo& in = ctx.inputs.at(0);
  int64_t to_code = ctx.attrs().GetInt("to", 0);
  auto to = DTypeFromOnnx(static_cast<int32_t>(to_code));
  if (!to) return MakeError(NodeError(ctx.node, "unknown target type " + std::to_string(to_code)));
  return CastOutput(in, *to);
}

Expected<std::vector<TensorInfo>> InferCastLike(const OpContext& ctx) {
  const TensorInfo& in = ctx.inputs.at(0);
  DType to = ctx.has_input(1) ? ctx.inputs[1].dtype : DType::kUndefined;
  return CastOutput(in, to);
}

Expected<std::vector<TensorInfo>> InferIdentity(const OpContext& ctx) {
  const TensorInfo& in = ctx.inputs.at(0);
  return std::vector<TensorInfo>{MakeOutput(in.dtype, in.shape, in.contents)};
}

// What a query op is beyond its shape rule.
// kValuesElementwise: each output element is a function of the same input element (CastLike).
enum class Reads { kValues, kShapeOnly, kValuesConverted, kValuesElementwise };

void Add(OpRegistry& registry, const char* op, ShapeRule rule, CostRule cost,
         const char* saved_source = kNothingSaved, Reads reads = Reads::kValues,
         GradientRule gradient_inputs = nullptr,
         OpSchema::HostValue host_value = OpSchema::HostValue::kComputed) {
  OpSchema schema = ShapeOpSchema(op);
  if (gradient_inputs) schema.gradient_inputs = std::move(gradient_inputs);
  schema.infer_shapes = std::move(rule);
  schema.cost = std::move(cost);
  schema.saved_source = saved_source;
  schema.reads_only_shape = reads == Reads::kShapeOnly;
  schema.converts_dtype = reads == Reads::kValuesConverted;
  // A dtype conversion is elementwise (aten._to_copy is tagged pointwise).
  schema.pointwise = reads == Reads::kValuesConverted || reads == Reads::kValuesElementwise;
  schema.host_value = host_value;
  registry.Register(std::move(schema));
}

}  // namespace

void RegisterShapeQueryOps(OpRegistry& registry) {
  constexpr const char* kNoGradient = "no gradient: the output does not depend on input values";
  Add(registry, "Shape", InferShape, NoCost, kNoGradient, Reads::kShapeOnly);
  Add(registry, "Size", InferSize, NoCost, kNoGradient, Reads::kShapeOnly);
  using HostValue = OpSchema::HostValue;
  Add(registry, "Constant", InferConstant, NoCost, kNoGradient, Reads::kValues, nullptr,
      HostValue::kLiteral);
  Add(registry, "ConstantOfShape", InferConstantOfShape, MovementCost, kNoGradient, Reads::kValues,
      nullptr, HostValue::kFilledShape);
  Add(registry, "Range", InferRange, MovementCost, "derivatives.yaml: arange is not differentiable",
      Reads::kValues, nullptr, HostValue::kSequence);
  Add(registry, "NonZero", InferNonZero, MovementCost,
      "derivatives.yaml: nonzero is not differentiable");
  Add(registry, "Cast", InferCast, MovementCost,
      "derivatives.yaml: _to_copy: _to_copy_backward(grad, self.options()) saves nothing",
      Reads::kValuesConverted);
  // CastLike converts to the dtype input 1 has when it runs, which a mixed-precision regime may
  // change: its dtype follows its inputs, not an attribute.
  // Input 1 gives only the dtype (x.to(other.dtype) reads no value of `other`): no gradient
  // flows to it, so a float initializer there is a constant, never trained (verify found its
  // backward asked for one, issue 45).
  Add(registry, "CastLike", InferCastLike, MovementCost,
      "derivatives.yaml: _to_copy: _to_copy_backward(grad, self.options()) saves nothing",
      Reads::kValuesElementwise, [](const OpContext& ctx) {
        return std::vector<bool>{ctx.has_input(0) && IsFloating(ctx.inputs[0].dtype), false};
      });

  OpSchema identity = ShapeOpSchema("Identity");
  identity.infer_shapes = InferIdentity;
  identity.cost = NoCost;
  identity.is_view = true;
  identity.saved_source = "derivatives.yaml: alias/view: grad passes through, nothing saved";
  registry.Register(std::move(identity));
}

}  // namespace memplan
