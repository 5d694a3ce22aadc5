// Gather along `axis` (embeddings are Gather on axis 0), GatherElements (torch.gather), GatherND
// (x[i, j]) and ScatterND. Gathers' backwards scatter-add into a zeroed tensor of the data's shape,
// so repeated indices accumulate (embedding_dense_backward, gather_backward).

#include <algorithm>
#include <string>
#include <string_view>
#include <vector>

#include "runtime/cpu/kernel_registry.h"
#include "runtime/cpu/kernels/kernel_families.h"
#include "runtime/cpu/kernels/kernel_util.h"

namespace memplan {
namespace {

// data viewed as [outer, axis_size, inner]; indices flattened to `count` entries.
struct GatherPlan {
  int64_t outer = 1, axis_size = 1, inner = 1;
  TensorShape output;
};

Expected<GatherPlan> PlanGather(const Attributes& attrs, const TensorShape& data,
                                const TensorShape& indices) {
  const auto rank = static_cast<int64_t>(data.size());
  MEMPLAN_TRY(int64_t axis, NormalizeAxis(attrs.GetInt("axis", 0), rank, "Gather"));
  GatherPlan plan;
  for (int64_t d = 0; d < rank; ++d) {
    const int64_t size = data[static_cast<size_t>(d)];
    if (d < axis) plan.outer *= size;
    if (d == axis) plan.axis_size = size;
    if (d > axis) plan.inner *= size;
    if (d == axis)
      plan.output.insert(plan.output.end(), indices.begin(), indices.end());
    else
      plan.output.push_back(size);
  }
  return plan;
}

// Indices with negatives wrapped, or an error for one out of range.
Expected<std::vector<int64_t>> ResolveIndices(const Tensor& indices, int64_t axis_size,
                                              std::string_view op = "Gather") {
  std::vector<int64_t> resolved = indices.ToInt64Vector();
  for (int64_t& i : resolved) {
    if (i < -axis_size || i >= axis_size) {
      return MakeError(std::string(op) + ": index " + std::to_string(i) +
                       " is out of range for a dim of " + std::to_string(axis_size));
    }
    if (i < 0) i += axis_size;
  }
  return resolved;
}

Expected<ForwardResult> GatherForward(const KernelContext& ctx, const ForwardArgs& args) {
  MEMPLAN_TRY(Tensor data, RequireTensor(args.inputs, 0, "Gather", "input"));
  MEMPLAN_TRY(Tensor indices, RequireTensor(args.inputs, 1, "Gather", "input"));
  MEMPLAN_TRY(GatherPlan plan,
              PlanGather(AttributesOf(args.attributes), data.shape(), indices.shape()));
  MEMPLAN_TRY(std::vector<int64_t> index, ResolveIndices(indices, plan.axis_size));
  Tensor y = NewOutput(ctx, plan.output, data.dtype());
  const auto count = static_cast<int64_t>(index.size());
  for (int64_t o = 0; o < plan.outer; ++o) {
    for (int64_t j = 0; j < count; ++j) {
      const float* src =
          data.data() + (o * plan.axis_size + index[static_cast<size_t>(j)]) * plan.inner;
      float* dst = y.mutable_data() + (o * count + j) * plan.inner;
      std::copy(src, src + plan.inner, dst);
    }
  }
  return SingleOutput(std::move(y));
}

Expected<InputGradients> GatherBackward(const KernelContext& ctx, const BackwardArgs& args) {
  MEMPLAN_TRY(Tensor dy, RequireTensor(args.grad_outputs, 0, "Gather", "output gradient"));
  MEMPLAN_TRY(Tensor indices, RequireTensor(args.inputs, 1, "Gather", "saved indices"));
  MEMPLAN_TRY(InputGradients grads, MakeGradientSlots(args, 2, "Gather"));
  if (!args.NeedsGrad(0)) return grads;
  MEMPLAN_TRY(GatherPlan plan,
              PlanGather(AttributesOf(args.attributes), args.input_shapes[0], indices.shape()));
  MEMPLAN_TRY(std::vector<int64_t> index, ResolveIndices(indices, plan.axis_size));
  Tensor dx = NewInputGradient(ctx, args, 0);
  const auto count = static_cast<int64_t>(index.size());
  for (int64_t o = 0; o < plan.outer; ++o) {
    for (int64_t j = 0; j < count; ++j) {
      const float* src = dy.data() + (o * count + j) * plan.inner;
      float* dst =
          dx.mutable_data() + (o * plan.axis_size + index[static_cast<size_t>(j)]) * plan.inner;
      for (int64_t k = 0; k < plan.inner; ++k) dst[k] += src[k];
    }
  }
  return WithRoundedGradient(std::move(grads), 0, std::move(dx));
}

// GatherElements(data, indices, axis): output[p] = data[p with its axis coordinate replaced by
// indices[p]]; the output has the indices' shape (of data's rank, each dim but the axis no
// larger than data's). Each output element's data offset, resolved once.
Expected<std::vector<int64_t>> GatherElementsOffsets(const Attributes& attrs,
                                                     const TensorShape& data,
                                                     const Tensor& indices) {
  constexpr std::string_view kOp = "GatherElements";
  const auto rank = static_cast<int64_t>(data.size());
  const TensorShape& shape = indices.shape();
  if (static_cast<int64_t>(shape.size()) != rank)
    return MakeError("GatherElements: indices " + ShapeToString(shape) + " and data " +
                     ShapeToString(data) + " differ in rank");
  MEMPLAN_TRY(int64_t axis, NormalizeAxis(attrs.GetInt("axis", 0), rank, kOp));
  for (int64_t d = 0; d < rank; ++d) {
    const auto u = static_cast<size_t>(d);
    if (d != axis && shape[u] > data[u])
      return MakeError("GatherElements: indices " + ShapeToString(shape) + " exceed data " +
                       ShapeToString(data) + " on axis " + std::to_string(d));
  }
  MEMPLAN_TRY(std::vector<int64_t> index,
              ResolveIndices(indices, data[static_cast<size_t>(axis)], kOp));
  const std::vector<int64_t> strides = ContiguousStrides(data);
  return PerElement(shape, [&](const std::vector<int64_t>& at, size_t e) {
    int64_t offset = 0;
    for (size_t d = 0; d < at.size(); ++d)
      offset += (static_cast<int64_t>(d) == axis ? index[e] : at[d]) * strides[d];
    return offset;
  });
}

Expected<ForwardResult> GatherElementsForward(const KernelContext& ctx, const ForwardArgs& args) {
  MEMPLAN_TRY(Tensor data, RequireTensor(args.inputs, 0, "GatherElements", "input"));
  MEMPLAN_TRY(Tensor indices, RequireTensor(args.inputs, 1, "GatherElements", "input"));
  MEMPLAN_TRY(std::vector<int64_t> offsets,
              GatherElementsOffsets(AttributesOf(args.attributes), data.shape(), indices));
  Tensor y = NewOverwrittenOutput(ctx, indices.shape(), data.dtype());
  for (size_t e = 0; e < offsets.size(); ++e) y.mutable_data()[e] = data.data()[offsets[e]];
  return SingleOutput(std::move(y));
}

Expected<InputGradients> GatherElementsBackward(const KernelContext& ctx,
                                                const BackwardArgs& args) {
  MEMPLAN_TRY(Tensor dy, RequireTensor(args.grad_outputs, 0, "GatherElements", "output gradient"));
  MEMPLAN_TRY(Tensor indices, RequireTensor(args.inputs, 1, "GatherElements", "saved indices"));
  MEMPLAN_TRY(InputGradients grads, MakeGradientSlots(args, 2, "GatherElements"));
  if (!args.NeedsGrad(0)) return grads;
  MEMPLAN_TRY(std::vector<int64_t> offsets,
              GatherElementsOffsets(AttributesOf(args.attributes), args.input_shapes[0], indices));
  Tensor dx = NewInputGradient(ctx, args, 0);
  for (size_t e = 0; e < offsets.size(); ++e) dx.mutable_data()[offsets[e]] += dy.data()[e];
  return WithRoundedGradient(std::move(grads), 0, std::move(dx));
}

// ScatterND(data, indices, updates): a copy of data with slices replaced (or, with `reduction`,
// combined): indices is [..., k], each row addresses data[i_0, ..., i_{k-1}, :...], a slice of
// the trailing dims, and updates holds one such slice per row (index_put_ in torch; Swin's
// shifted-window mask is built this way). GatherND reads the same slices (batch_dims 0). Every
// slice's flat offset, resolved once.
struct SlicePlan {
  std::vector<int64_t> offsets;  // per index row: the slice's first element in data
  int64_t slice = 1;             // elements per slice
  TensorShape rows_shape;        // indices.shape[:-1] + the slice's dims: updates' or the output
};

Expected<SlicePlan> PlanSlices(std::string_view op, const TensorShape& data,
                               const Tensor& indices) {
  const std::string name(op);
  if (indices.shape().empty()) return MakeError(name + ": indices must have rank >= 1");
  const int64_t k = indices.shape().back();
  if (k < 1 || k > static_cast<int64_t>(data.size()))
    return MakeError(name + ": index rows of " + std::to_string(k) + " for data of rank " +
                     std::to_string(data.size()));
  SlicePlan plan;
  plan.rows_shape.assign(indices.shape().begin(), indices.shape().end() - 1);
  for (size_t d = static_cast<size_t>(k); d < data.size(); ++d) {
    plan.slice *= data[d];
    plan.rows_shape.push_back(data[d]);
  }
  const std::vector<int64_t> strides = ContiguousStrides(data);
  const std::vector<int64_t> rows = indices.ToInt64Vector();
  for (size_t r = 0; r + static_cast<size_t>(k) <= rows.size(); r += static_cast<size_t>(k)) {
    int64_t offset = 0;
    for (size_t d = 0; d < static_cast<size_t>(k); ++d) {
      int64_t i = rows[r + d];
      if (i < -data[d] || i >= data[d])
        return MakeError(name + ": index " + std::to_string(i) + " is out of range for a dim of " +
                         std::to_string(data[d]));
      if (i < 0) i += data[d];
      offset += i * strides[d];
    }
    plan.offsets.push_back(offset);
  }
  return plan;
}

Expected<SlicePlan> PlanScatter(const TensorShape& data, const Tensor& indices,
                                const TensorShape& updates) {
  MEMPLAN_TRY(SlicePlan plan, PlanSlices("ScatterND", data, indices));
  if (plan.rows_shape != updates)
    return MakeError("ScatterND: updates " + ShapeToString(updates) + " do not match " +
                     ShapeToString(plan.rows_shape));
  return plan;
}

// GatherND with batch_dims 0 (what the dynamo exporter writes for x[i, j]); batch_dims > 0 is
// planned, not executed.
Expected<SlicePlan> PlanGatherND(const Attributes& attrs, const TensorShape& data,
                                 const Tensor& indices) {
  if (attrs.GetInt("batch_dims", 0) != 0)
    return MakeError("GatherND: the CPU runtime executes batch_dims 0 only");
  return PlanSlices("GatherND", data, indices);
}

Expected<ForwardResult> GatherNDForward(const KernelContext& ctx, const ForwardArgs& args) {
  MEMPLAN_TRY(Tensor data, RequireTensor(args.inputs, 0, "GatherND", "data"));
  MEMPLAN_TRY(Tensor indices, RequireTensor(args.inputs, 1, "GatherND", "indices"));
  MEMPLAN_TRY(SlicePlan plan, PlanGatherND(AttributesOf(args.attributes), data.shape(), indices));
  Tensor y = NewOverwrittenOutput(ctx, plan.rows_shape, data.dtype());
  float* out = y.mutable_data();
  for (size_t r = 0; r < plan.offsets.size(); ++r)
    std::copy(data.data() + plan.offsets[r], data.data() + plan.offsets[r] + plan.slice,
              out + static_cast<int64_t>(r) * plan.slice);
  return RoundedSingleOutput(std::move(y));
}

// index_backward: the output gradient added into a zeroed tensor of data's shape at the gathered
// slices, so a slice gathered twice gets both.
Expected<InputGradients> GatherNDBackward(const KernelContext& ctx, const BackwardArgs& args) {
  MEMPLAN_TRY(Tensor dy, RequireTensor(args.grad_outputs, 0, "GatherND", "output gradient"));
  MEMPLAN_TRY(InputGradients grads, MakeGradientSlots(args, 2, "GatherND"));
  if (!args.NeedsGrad(0)) return grads;
  MEMPLAN_TRY(Tensor indices, RequireTensor(args.inputs, 1, "GatherND", "saved indices"));
  MEMPLAN_TRY(SlicePlan plan,
              PlanGatherND(AttributesOf(args.attributes), args.input_shapes[0], indices));
  Tensor dx = NewInputGradient(ctx, args, 0);
  float* out = dx.mutable_data();
  for (size_t r = 0; r < plan.offsets.size(); ++r)
    for (int64_t e = 0; e < plan.slice; ++e)
      out[plan.offsets[r] + e] += dy.data()[static_cast<int64_t>(r) * plan.slice + e];
  return WithRoundedGradient(std::move(grads), 0, std::move(dx));
}

Expected<ForwardResult> ScatterNDForward(const KernelContext& ctx, const ForwardArgs& args) {
  MEMPLAN_TRY(Tensor data, RequireTensor(args.inputs, 0, "ScatterND", "data"));
  MEMPLAN_TRY(Tensor indices, RequireTensor(args.inputs, 1, "ScatterND", "indices"));
  MEMPLAN_TRY(Tensor updates, RequireTensor(args.inputs, 2, "ScatterND", "updates"));
  MEMPLAN_TRY(SlicePlan plan, PlanScatter(data.shape(), indices, updates.shape()));
  const std::string reduction = AttributesOf(args.attributes).GetString("reduction", "none");
  Tensor y = NewOverwrittenOutput(ctx, data.shape(), data.dtype());
  float* out = y.mutable_data();
  std::copy(data.data(), data.data() + data.numel(), out);
  for (size_t r = 0; r < plan.offsets.size(); ++r) {
    float* dst = out + plan.offsets[r];
    const float* src = updates.data() + static_cast<int64_t>(r) * plan.slice;
    for (int64_t e = 0; e < plan.slice; ++e) {
      if (reduction == "none") {
        dst[e] = src[e];
      } else if (reduction == "add") {
        dst[e] += src[e];
      } else if (reduction == "mul") {
        dst[e] *= src[e];
      } else if (reduction == "max") {
        dst[e] = std::max(dst[e], src[e]);
      } else if (reduction == "min") {
        dst[e] = std::min(dst[e], src[e]);
      } else {
        return MakeError("ScatterND: unknown reduction '" + reduction + "'");
      }
    }
  }
  return RoundedSingleOutput(std::move(y));
}

// index_put_'s backward (reduction "none"): data's gradient is dY with the replaced slices
// zeroed, updates' is dY at them. "add" passes dY whole to data; other reductions have none here.
Expected<InputGradients> ScatterNDBackward(const KernelContext& ctx, const BackwardArgs& args) {
  MEMPLAN_TRY(Tensor dy, RequireTensor(args.grad_outputs, 0, "ScatterND", "output gradient"));
  MEMPLAN_TRY(InputGradients grads, MakeGradientSlots(args, 3, "ScatterND"));
  if (!args.NeedsGrad(0) && !args.NeedsGrad(2)) return grads;
  const std::string reduction = AttributesOf(args.attributes).GetString("reduction", "none");
  if (reduction != "none" && reduction != "add")
    return MakeError("ScatterND: no gradient for reduction '" + reduction + "'");
  MEMPLAN_TRY(Tensor indices, RequireTensor(args.inputs, 1, "ScatterND", "saved indices"));
  MEMPLAN_TRY(SlicePlan plan, PlanScatter(args.input_shapes[0], indices, args.input_shapes[2]));
  if (args.NeedsGrad(0)) {
    Tensor d_data = NewOverwrittenInputGradient(ctx, args, 0);
    float* out = d_data.mutable_data();
    std::copy(dy.data(), dy.data() + dy.numel(), out);
    if (reduction == "none")
      for (int64_t offset : plan.offsets) std::fill(out + offset, out + offset + plan.slice, 0.0f);
    PutRoundedGradient(grads, 0, std::move(d_data));
  }
  if (args.NeedsGrad(2)) {
    Tensor d_updates = NewOverwrittenInputGradient(ctx, args, 2);
    float* out = d_updates.mutable_data();
    for (size_t r = 0; r < plan.offsets.size(); ++r)
      std::copy(dy.data() + plan.offsets[r], dy.data() + plan.offsets[r] + plan.slice,
                out + static_cast<int64_t>(r) * plan.slice);
    PutRoundedGradient(grads, 2, std::move(d_updates));
  }
  return grads;
}

}  // namespace

void RegisterGatherKernels(KernelRegistry& registry) {
  registry.Register("Gather", &GatherForward, &GatherBackward);
  registry.Register("GatherElements", &GatherElementsForward, &GatherElementsBackward);
  registry.Register("GatherND", &GatherNDForward, &GatherNDBackward);
  registry.Register("ScatterND", &ScatterNDForward, &ScatterNDBackward);
}

}  // namespace memplan
