// Data-movement ops. Reshape, Flatten, Squeeze and Unsqueeze return views (no buffer, as the op
// registry's is_view says) and so do their backwards. Transpose, Expand, Concat, Split and Slice
// copy; their backwards are the adjoint copies (inverse permutation, sum over broadcast dims,
// split, concatenation, scatter into zeros). Split and Slice are views in the program, as
// torch's are: their copies here are backend scratch that the program does not count.

#include <algorithm>
#include <array>
#include <numeric>
#include <string>

#include "graph/ops/geometry/reshape.h"
#include "runtime/cpu/kernel_registry.h"
#include "runtime/cpu/kernels/broadcast.h"
#include "runtime/cpu/kernels/kernel_families.h"
#include "runtime/cpu/kernels/kernel_util.h"

namespace memplan {
namespace {

// ---- views -------------------------------------------------------------------------------------

// The shared geometry's error (graph/ops/geometry/reshape.h), prefixed with the op.
template <class T>
Expected<T> Named(const char* op, Expected<T> result) {
  if (!result.ok()) return MakeError(std::string(op) + ": " + result.error().message);
  return result;
}

Expected<ForwardResult> ReshapeForward(const KernelContext&, const ForwardArgs& args) {
  MEMPLAN_TRY(Tensor x, RequireTensor(args.inputs, 0, "Reshape", "input"));
  MEMPLAN_TRY(Tensor shape, RequireTensor(args.inputs, 1, "Reshape", "input"));
  const bool allow_zero = AttributesOf(args.attributes).GetInt("allowzero", 0) != 0;
  MEMPLAN_TRY(ReshapeOutput<int64_t> target,
              Named("Reshape", ReshapeShape(&x.shape(), shape.ToInt64Vector(), allow_zero)));
  return SingleOutput(x.View(target.dims));
}

Expected<ForwardResult> FlattenForward(const KernelContext&, const ForwardArgs& args) {
  MEMPLAN_TRY(Tensor x, RequireTensor(args.inputs, 0, "Flatten", "input"));
  const int64_t axis = AttributesOf(args.attributes).GetInt("axis", 1);
  MEMPLAN_TRY(TensorShape shape, Named("Flatten", FlattenShape(x.shape(), axis)));
  return SingleOutput(x.View(shape));
}

Expected<ForwardResult> SqueezeForward(const KernelContext&, const ForwardArgs& args) {
  MEMPLAN_TRY(Tensor x, RequireTensor(args.inputs, 0, "Squeeze", "input"));
  const IntList axes =
      IntsFromInputOrAttribute(args.inputs, 1, AttributesOf(args.attributes), "axes");
  MEMPLAN_TRY(TensorShape shape, Named("Squeeze", SqueezeShape(x.shape(), axes.values)));
  return SingleOutput(x.View(shape));
}

Expected<ForwardResult> UnsqueezeForward(const KernelContext&, const ForwardArgs& args) {
  MEMPLAN_TRY(Tensor x, RequireTensor(args.inputs, 0, "Unsqueeze", "input"));
  const IntList axes =
      IntsFromInputOrAttribute(args.inputs, 1, AttributesOf(args.attributes), "axes");
  if (!axes.found) return MakeError("Unsqueeze: axes are missing");
  MEMPLAN_TRY(TensorShape shape, Named("Unsqueeze", UnsqueezeShape(x.shape(), axes.values)));
  return SingleOutput(x.View(shape));
}

// Backward of every view op: the output gradient seen in the input's shape.
template <const char* kName>
Expected<InputGradients> ViewBackward(const KernelContext&, const BackwardArgs& args) {
  MEMPLAN_TRY(Tensor dy, RequireTensor(args.grad_outputs, 0, kName, "output gradient"));
  MEMPLAN_TRY(InputGradients grads, MakeGradientSlots(args, 1, kName));
  if (args.NeedsGrad(0)) grads[0] = dy.View(args.input_shapes[0]);
  return grads;
}
constexpr char kReshape[] = "Reshape";
constexpr char kFlatten[] = "Flatten";
constexpr char kSqueeze[] = "Squeeze";
constexpr char kUnsqueeze[] = "Unsqueeze";

// ---- Transpose ---------------------------------------------------------------------------------

std::vector<int64_t> PermOf(const Attributes& attrs, size_t rank) {
  std::vector<int64_t> reversed(rank);
  for (size_t i = 0; i < rank; ++i) reversed[i] = static_cast<int64_t>(rank - 1 - i);
  return attrs.GetInts("perm", reversed);
}

// out[i_0..i_r] = in[i at perm]: out dim d walks input dim perm[d].
Tensor Permute(const KernelContext& ctx, const Tensor& x, const std::vector<int64_t>& perm,
               DType dtype) {
  TensorShape shape;
  for (int64_t p : perm) shape.push_back(x.shape()[static_cast<size_t>(p)]);
  Tensor y = NewOverwrittenOutput(ctx, shape, dtype);
  PermuteInto(x.data(), x.shape(), perm, y.mutable_data());
  return y;
}

Status CheckPerm(const std::vector<int64_t>& perm, size_t rank) {
  std::vector<int64_t> sorted = perm;
  std::sort(sorted.begin(), sorted.end());
  for (size_t i = 0; i < sorted.size(); ++i) {
    if (sorted[i] != static_cast<int64_t>(i) || sorted.size() != rank) {
      return MakeError("Transpose: perm is not a permutation of the input's " +
                       std::to_string(rank) + " dims");
    }
  }
  if (sorted.size() != rank) return MakeError("Transpose: perm has the wrong length");
  return OkStatus();
}

Expected<ForwardResult> TransposeForward(const KernelContext& ctx, const ForwardArgs& args) {
  MEMPLAN_TRY(Tensor x, RequireTensor(args.inputs, 0, "Transpose", "input"));
  const std::vector<int64_t> perm = PermOf(AttributesOf(args.attributes), x.shape().size());
  MEMPLAN_RETURN_IF_ERROR(CheckPerm(perm, x.shape().size()));
  return SingleOutput(Permute(ctx, x, perm, x.dtype()));
}

Expected<InputGradients> TransposeBackward(const KernelContext& ctx, const BackwardArgs& args) {
  MEMPLAN_TRY(Tensor dy, RequireTensor(args.grad_outputs, 0, "Transpose", "output gradient"));
  MEMPLAN_TRY(InputGradients grads, MakeGradientSlots(args, 1, "Transpose"));
  if (!args.NeedsGrad(0)) return grads;
  const std::vector<int64_t> perm =
      PermOf(AttributesOf(args.attributes), args.input_shapes[0].size());
  MEMPLAN_RETURN_IF_ERROR(CheckPerm(perm, args.input_shapes[0].size()));
  std::vector<int64_t> inverse(perm.size());
  for (size_t i = 0; i < perm.size(); ++i)
    inverse[static_cast<size_t>(perm[i])] = static_cast<int64_t>(i);
  grads[0] =
      Permute(ctx, dy, inverse,
              FloatResultType(args.input_dtypes.empty() ? DType::kFloat32 : args.input_dtypes[0]));
  return grads;
}

// ---- Expand ------------------------------------------------------------------------------------

Expected<ForwardResult> ExpandForward(const KernelContext& ctx, const ForwardArgs& args) {
  MEMPLAN_TRY(Tensor x, RequireTensor(args.inputs, 0, "Expand", "input"));
  MEMPLAN_TRY(Tensor shape, RequireTensor(args.inputs, 1, "Expand", "input"));
  MEMPLAN_TRY(TensorShape out, BroadcastShapes(x.shape(), shape.ToInt64Vector(), "Expand"));
  return SingleOutput(BroadcastTo(ctx, x, out));
}

Expected<InputGradients> ExpandBackward(const KernelContext& ctx, const BackwardArgs& args) {
  MEMPLAN_TRY(Tensor dy, RequireTensor(args.grad_outputs, 0, "Expand", "output gradient"));
  MEMPLAN_TRY(InputGradients grads, MakeGradientSlots(args, 1, "Expand"));
  if (args.NeedsGrad(0)) {
    grads[0] =
        SumToShape(ctx, dy, args.input_shapes[0],
                   FloatResultType(args.input_dtypes.empty() ? dy.dtype() : args.input_dtypes[0]));
  }
  return grads;
}

// ---- Concat / Split ----------------------------------------------------------------------------

// A tensor viewed as [outer, size along axis, inner].
struct AxisBlocks {
  int64_t outer = 1, inner = 1;
};
AxisBlocks BlocksAround(const TensorShape& shape, int64_t axis) {
  AxisBlocks b;
  for (size_t d = 0; d < shape.size(); ++d) {
    if (static_cast<int64_t>(d) < axis) b.outer *= shape[d];
    if (static_cast<int64_t>(d) > axis) b.inner *= shape[d];
  }
  return b;
}

// Copies each part to/from its slab of `whole` along `axis` (`into_whole` chooses the direction).
// sizes[i] is part i's extent along axis; an undefined part is skipped (its slab left as is).
void CopySlabs(const Tensor& whole, const std::vector<Tensor>& parts,
               const std::vector<int64_t>& sizes, int64_t axis, bool into_whole) {
  const AxisBlocks blocks = BlocksAround(whole.shape(), axis);
  const int64_t whole_row = whole.dim(axis) * blocks.inner;
  int64_t offset = 0;
  for (size_t i = 0; i < parts.size(); ++i) {
    const int64_t part_row = sizes[i] * blocks.inner;
    if (parts[i].defined() && part_row > 0) {
      for (int64_t o = 0; o < blocks.outer; ++o) {
        float* w = whole.mutable_data() + o * whole_row + offset;
        float* p = parts[i].mutable_data() + o * part_row;
        if (into_whole) {
          std::copy(p, p + part_row, w);
        } else {
          std::copy(w, w + part_row, p);
        }
      }
    }
    offset += part_row;
  }
}

Expected<ForwardResult> ConcatForward(const KernelContext& ctx, const ForwardArgs& args) {
  if (args.inputs.empty()) return MakeError("Concat: no inputs");
  MEMPLAN_TRY(Tensor first, RequireTensor(args.inputs, 0, "Concat", "input"));
  MEMPLAN_TRY(int64_t axis, NormalizeAxis(AttributesOf(args.attributes).GetInt("axis", 0),
                                          first.rank(), "Concat"));
  TensorShape shape = first.shape();
  shape[static_cast<size_t>(axis)] = 0;
  for (size_t i = 0; i < args.inputs.size(); ++i) {
    MEMPLAN_TRY(Tensor t, RequireTensor(args.inputs, i, "Concat", "input"));
    for (int64_t d = 0; d < first.rank(); ++d) {
      if (t.rank() != first.rank() || (d != axis && t.dim(d) != first.dim(d))) {
        return MakeError("Concat: input " + ShapeToString(t.shape()) + " does not match " +
                         ShapeToString(first.shape()) + " off axis " + std::to_string(axis));
      }
    }
    shape[static_cast<size_t>(axis)] += t.dim(axis);
  }
  Tensor y = NewOutput(ctx, shape, first.dtype());
  std::vector<int64_t> sizes;
  for (const Tensor& t : args.inputs) sizes.push_back(t.dim(axis));
  CopySlabs(y, args.inputs, sizes, axis, /*into_whole=*/true);
  return SingleOutput(std::move(y));
}

Expected<InputGradients> ConcatBackward(const KernelContext& ctx, const BackwardArgs& args) {
  MEMPLAN_TRY(Tensor dy, RequireTensor(args.grad_outputs, 0, "Concat", "output gradient"));
  MEMPLAN_TRY(InputGradients grads, MakeGradientSlots(args, 1, "Concat"));
  MEMPLAN_TRY(int64_t axis,
              NormalizeAxis(AttributesOf(args.attributes).GetInt("axis", 0), dy.rank(), "Concat"));
  std::vector<int64_t> sizes;
  for (size_t i = 0; i < args.input_shapes.size(); ++i) {
    if (args.input_shapes[i].size() != dy.shape().size()) {
      return MakeError("Concat: input " + std::to_string(i) + " has the wrong rank");
    }
    sizes.push_back(args.input_shapes[i][static_cast<size_t>(axis)]);
    if (args.NeedsGrad(i)) grads[i] = NewInputGradient(ctx, args, i);
  }
  CopySlabs(dy, grads, sizes, axis, /*into_whole=*/false);
  return grads;
}

// The sizes of Split's outputs along `axis`.
Expected<std::vector<int64_t>> SplitSizes(const Attributes& attrs,
                                          const std::vector<Tensor>& inputs, int64_t dim,
                                          int64_t num_outputs) {
  const IntList given = IntsFromInputOrAttribute(inputs, 1, attrs, "split");
  std::vector<int64_t> sizes = given.values;
  if (sizes.empty()) {
    const int64_t n = attrs.GetInt("num_outputs", num_outputs);
    if (n <= 0) return MakeError("Split: number of outputs must be positive");
    // Equal chunks; opset 18 lets the last one be smaller (ceil-sized chunks).
    const int64_t chunk = (dim + n - 1) / n;
    for (int64_t i = 0; i < n; ++i)
      sizes.push_back(std::max<int64_t>(0, std::min(chunk, dim - i * chunk)));
  }
  if (std::accumulate(sizes.begin(), sizes.end(), int64_t{0}) != dim) {
    return MakeError("Split: sizes do not add up to the dim of " + std::to_string(dim));
  }
  return sizes;
}

Expected<ForwardResult> SplitForward(const KernelContext& ctx, const ForwardArgs& args) {
  MEMPLAN_TRY(Tensor x, RequireTensor(args.inputs, 0, "Split", "input"));
  const Attributes& attrs = AttributesOf(args.attributes);
  MEMPLAN_TRY(int64_t axis, NormalizeAxis(attrs.GetInt("axis", 0), x.rank(), "Split"));
  MEMPLAN_TRY(std::vector<int64_t> sizes,
              SplitSizes(attrs, args.inputs, x.dim(axis), args.num_outputs));
  ForwardResult result;
  for (int64_t size : sizes) {
    TensorShape shape = x.shape();
    shape[static_cast<size_t>(axis)] = size;
    result.outputs.push_back(NewOutput(ctx, shape, x.dtype()));
  }
  CopySlabs(x, result.outputs, sizes, axis, /*into_whole=*/false);
  return result;
}

// grad_outputs has one entry per forward output; an undefined one contributes zeros.
Expected<InputGradients> SplitBackward(const KernelContext& ctx, const BackwardArgs& args) {
  MEMPLAN_TRY(InputGradients grads, MakeGradientSlots(args, 1, "Split"));
  if (!args.NeedsGrad(0)) return grads;
  const Attributes& attrs = AttributesOf(args.attributes);
  const TensorShape& input = args.input_shapes[0];
  MEMPLAN_TRY(int64_t axis,
              NormalizeAxis(attrs.GetInt("axis", 0), static_cast<int64_t>(input.size()), "Split"));
  MEMPLAN_TRY(std::vector<int64_t> sizes,
              SplitSizes(attrs, args.inputs, input[static_cast<size_t>(axis)],
                         static_cast<int64_t>(args.grad_outputs.size())));
  if (sizes.size() != args.grad_outputs.size()) {
    return MakeError("Split: expected " + std::to_string(sizes.size()) + " output gradients");
  }
  // Undefined output gradients are skipped, leaving their slabs of the zeroed buffer at zero.
  Tensor dx = NewInputGradient(ctx, args, 0);
  CopySlabs(dx, args.grad_outputs, sizes, axis, /*into_whole=*/true);
  grads[0] = std::move(dx);
  return grads;
}

// ---- Slice -------------------------------------------------------------------------------------

// Output shape plus, per output dim, the input stride of one step and the first element offset.
struct SlicePlan {
  TensorShape output;
  std::vector<int64_t> strides;
  int64_t base = 0;
};

Expected<SlicePlan> PlanSlice(const Attributes& attrs, const std::vector<Tensor>& inputs,
                              const TensorShape& x) {
  const IntList starts = IntsFromInputOrAttribute(inputs, 1, attrs, "starts");
  const IntList ends = IntsFromInputOrAttribute(inputs, 2, attrs, "ends");
  const IntList given_axes = IntsFromInputOrAttribute(inputs, 3, attrs, "axes");
  const IntList given_steps = IntsFromInputOrAttribute(inputs, 4, attrs, "steps");
  if (!starts.found || !ends.found || starts.values.size() != ends.values.size()) {
    return MakeError("Slice: starts and ends are missing or differ in length");
  }
  const size_t n = starts.values.size();
  std::vector<int64_t> axes = given_axes.values;
  if (axes.empty()) {
    for (size_t i = 0; i < n; ++i) axes.push_back(static_cast<int64_t>(i));
  }
  std::vector<int64_t> steps = given_steps.values;
  if (steps.empty()) steps.assign(n, 1);
  if (axes.size() != n || steps.size() != n) {
    return MakeError("Slice: starts, ends, axes and steps differ in length");
  }
  const auto rank = static_cast<int64_t>(x.size());
  const std::vector<int64_t> in_strides = ContiguousStrides(x);
  SlicePlan plan;
  plan.output = x;
  plan.strides = in_strides;
  for (size_t i = 0; i < n; ++i) {
    MEMPLAN_TRY(int64_t axis, NormalizeAxis(axes[i], rank, "Slice"));
    const auto a = static_cast<size_t>(axis);
    const int64_t dim = x[a], step = steps[i];
    if (step == 0) return MakeError("Slice: step 0");
    int64_t start = starts.values[i], end = ends.values[i];
    if (start < 0) start += dim;
    if (end < 0) end += dim;
    if (step > 0) {
      start = std::clamp<int64_t>(start, 0, dim);
      end = std::clamp<int64_t>(end, 0, dim);
      plan.output[a] = end > start ? (end - start + step - 1) / step : 0;
    } else {
      start = std::clamp<int64_t>(start, 0, dim - 1);
      end = std::clamp<int64_t>(end, -1, dim - 1);
      plan.output[a] = start > end ? (start - end - step - 1) / -step : 0;
    }
    plan.strides[a] = in_strides[a] * step;
    if (plan.output[a] > 0) plan.base += start * in_strides[a];
  }
  return plan;
}

Expected<ForwardResult> SliceForward(const KernelContext& ctx, const ForwardArgs& args) {
  MEMPLAN_TRY(Tensor x, RequireTensor(args.inputs, 0, "Slice", "input"));
  MEMPLAN_TRY(SlicePlan plan, PlanSlice(AttributesOf(args.attributes), args.inputs, x.shape()));
  Tensor y = NewOutput(ctx, plan.output, x.dtype());
  const std::array<std::vector<int64_t>, 1> strides = {plan.strides};
  ForEachBroadcastIndex(plan.output, strides, [&](int64_t i, const std::array<int64_t, 1>& off) {
    y.mutable_data()[i] = x.data()[plan.base + off[0]];
  });
  return SingleOutput(std::move(y));
}

Expected<InputGradients> SliceBackward(const KernelContext& ctx, const BackwardArgs& args) {
  MEMPLAN_TRY(Tensor dy, RequireTensor(args.grad_outputs, 0, "Slice", "output gradient"));
  MEMPLAN_TRY(InputGradients grads, MakeGradientSlots(args, 1, "Slice"));
  if (!args.NeedsGrad(0)) return grads;
  MEMPLAN_TRY(SlicePlan plan,
              PlanSlice(AttributesOf(args.attributes), args.inputs, args.input_shapes[0]));
  Tensor dx = NewInputGradient(ctx, args, 0);
  const std::array<std::vector<int64_t>, 1> strides = {plan.strides};
  ForEachBroadcastIndex(plan.output, strides, [&](int64_t i, const std::array<int64_t, 1>& off) {
    dx.mutable_data()[plan.base + off[0]] = dy.data()[i];
  });
  grads[0] = std::move(dx);
  return grads;
}

// ---- Tile
// ----------------------------------------------------------------------------------------

// Per output element, the input element it copies: along each axis the output coordinate modulo
// the input's extent.
Expected<std::vector<int64_t>> TileSources(const TensorShape& x, const Tensor& repeats_input,
                                           TensorShape& output) {
  const std::vector<int64_t> repeats = repeats_input.ToInt64Vector();
  if (repeats.size() != x.size())
    return MakeError("Tile: " + std::to_string(repeats.size()) + " repeats for rank " +
                     std::to_string(x.size()));
  output.clear();
  for (size_t d = 0; d < x.size(); ++d) {
    if (repeats[d] < 0) return MakeError("Tile: a negative repeat");
    output.push_back(x[d] * repeats[d]);
  }
  const std::vector<int64_t> strides = ContiguousStrides(x);
  return PerElement(output, [&](const std::vector<int64_t>& at, size_t) {
    int64_t offset = 0;
    for (size_t d = 0; d < x.size(); ++d) offset += (at[d] % x[d]) * strides[d];
    return offset;
  });
}

Expected<ForwardResult> TileForward(const KernelContext& ctx, const ForwardArgs& args) {
  MEMPLAN_TRY(Tensor x, RequireTensor(args.inputs, 0, "Tile", "input"));
  MEMPLAN_TRY(Tensor repeats, RequireTensor(args.inputs, 1, "Tile", "repeats"));
  TensorShape shape;
  MEMPLAN_TRY(std::vector<int64_t> sources, TileSources(x.shape(), repeats, shape));
  Tensor y = NewOverwrittenOutput(ctx, shape, x.dtype());
  for (size_t e = 0; e < sources.size(); ++e) y.mutable_data()[e] = x.data()[sources[e]];
  return SingleOutput(std::move(y));
}

// repeat_backward: each input element gets the sum of the gradients of its copies.
Expected<InputGradients> TileBackward(const KernelContext& ctx, const BackwardArgs& args) {
  return FirstInputBackward(args, 2, "Tile", [&](const Tensor& dy) -> Expected<Tensor> {
    MEMPLAN_TRY(Tensor repeats, RequireTensor(args.inputs, 1, "Tile", "repeats"));
    TensorShape shape;
    MEMPLAN_TRY(std::vector<int64_t> sources, TileSources(args.input_shapes[0], repeats, shape));
    if (static_cast<int64_t>(sources.size()) != dy.numel())
      return MakeError("Tile: the output gradient does not match the tiled shape");
    Tensor dx = NewInputGradient(ctx, args, 0);
    for (size_t e = 0; e < sources.size(); ++e) dx.mutable_data()[sources[e]] += dy.data()[e];
    return dx;
  });
}

}  // namespace

void RegisterShapeKernels(KernelRegistry& registry) {
  registry.Register("Reshape", &ReshapeForward, &ViewBackward<kReshape>);
  registry.Register("Flatten", &FlattenForward, &ViewBackward<kFlatten>);
  registry.Register("Squeeze", &SqueezeForward, &ViewBackward<kSqueeze>);
  registry.Register("Unsqueeze", &UnsqueezeForward, &ViewBackward<kUnsqueeze>);
  registry.Register("Transpose", &TransposeForward, &TransposeBackward);
  registry.Register("Expand", &ExpandForward, &ExpandBackward);
  registry.Register("Concat", &ConcatForward, &ConcatBackward);
  registry.Register("Split", &SplitForward, &SplitBackward);
  registry.Register("Slice", &SliceForward, &SliceBackward);
  registry.Register("Tile", &TileForward, &TileBackward);
}

}  // namespace memplan
