// MaxPool (with ONNX-style flat indices kept for backward), AveragePool (count_include_pad as
// PyTorch counts it) and GlobalAveragePool.

#include <algorithm>
#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include "runtime/cpu/kernel_registry.h"
#include "runtime/cpu/kernels/kernel_families.h"
#include "runtime/cpu/kernels/kernel_util.h"
#include "runtime/cpu/kernels/window_geometry.h"
#include "runtime/cpu/parallel_for.h"

namespace memplan {
namespace {

Expected<WindowGeometry> PoolGeometry(std::string_view op, const Attributes& attrs,
                                      const TensorShape& x) {
  if (!attrs.Has("kernel_shape")) {
    return MakeError(std::string(op) + ": the kernel_shape attribute is missing");
  }
  return ComputeWindowGeometry(op, attrs, x, attrs.GetInts("kernel_shape"), true);
}

// Calls window(out_index, in_indices, count) once per output element with the flat indices of
// its taps that land inside the input, in kernel order (row-major over the taps). Planes
// (n * C + c) run in parallel; all indices of a call lie in the same plane, so a window that
// writes only at those indices writes only its own plane, and inside a plane the order is fixed.
template <class Window>
void ForEachPoolWindow(const WindowGeometry& g, Window&& window) {
  const int64_t in_plane = g.h.input * g.w.input, out_plane = g.h.output * g.w.output;
  const int64_t taps = g.h.kernel * g.w.kernel;
  // The in-input taps of each output row / column: a contiguous range of kernel offsets (the
  // input coordinate grows with the offset), found once instead of tested per tap.
  const auto valid_taps = [](const WindowAxis& axis) {
    std::vector<WindowAxis::Range> ranges(static_cast<size_t>(axis.output), {0, 0});
    for (int64_t out = 0; out < axis.output; ++out) {
      WindowAxis::Range& r = ranges[static_cast<size_t>(out)];
      r = {axis.kernel, 0};
      for (int64_t tap = 0; tap < axis.kernel; ++tap) {
        const int64_t i = axis.InputIndex(out, tap);
        if (i < 0 || i >= axis.input) continue;
        r.first = std::min(r.first, tap);
        r.last = tap + 1;
      }
      if (r.last < r.first) r = {0, 0};
    }
    return ranges;
  };
  const std::vector<WindowAxis::Range> rows = valid_taps(g.h), cols = valid_taps(g.w);
  const int64_t grain =
      std::max<int64_t>(1, ElementwiseGrain() / std::max<int64_t>(1, out_plane * taps));
  ParallelFor(g.batch * g.channels, grain, [&](int64_t first_plane, int64_t last_plane) {
    std::vector<int64_t> indices(static_cast<size_t>(taps));
    for (int64_t plane = first_plane; plane < last_plane; ++plane) {
      for (int64_t oh = 0; oh < g.h.output; ++oh) {
        const WindowAxis::Range kh_range = rows[static_cast<size_t>(oh)];
        for (int64_t ow = 0; ow < g.w.output; ++ow) {
          const WindowAxis::Range kw_range = cols[static_cast<size_t>(ow)];
          int64_t count = 0;
          for (int64_t kh = kh_range.first; kh < kh_range.last; ++kh) {
            const int64_t row = plane * in_plane + g.h.InputIndex(oh, kh) * g.w.input;
            for (int64_t kw = kw_range.first; kw < kw_range.last; ++kw)
              indices[static_cast<size_t>(count++)] = row + g.w.InputIndex(ow, kw);
          }
          window(plane * out_plane + oh * g.w.output + ow, indices.data(), count);
        }
      }
    }
  });
}

// Calls visit(out_index, in_index) for every (output element, in-input tap) pair, in
// ForEachPoolWindow's order and with its threading.
template <class Visit>
void ForEachPoolTap(const WindowGeometry& g, Visit&& visit) {
  ForEachPoolWindow(g, [&](int64_t o, const int64_t* in_indices, int64_t count) {
    for (int64_t t = 0; t < count; ++t) visit(o, in_indices[t]);
  });
}

Expected<ForwardResult> MaxPoolForward(const KernelContext& ctx, const ForwardArgs& args) {
  MEMPLAN_TRY(Tensor x, RequireTensor(args.inputs, 0, "MaxPool", "input"));
  const Attributes& attrs = AttributesOf(args.attributes);
  if (attrs.GetInt("storage_order", 0) != 0) {
    return MakeError("MaxPool: storage_order=1 (column-major indices) is not supported");
  }
  MEMPLAN_TRY(WindowGeometry g, PoolGeometry("MaxPool", attrs, x.shape()));
  const TensorShape shape = g.OutputShape(g.channels);
  Tensor y = NewOverwrittenOutput(ctx, shape, x.dtype());  // every element written below
  // The indices are both the optional ONNX output and the saved extra: one buffer, two handles.
  Tensor indices = args.num_outputs >= 2 ? NewOutput(ctx, shape, DType::kInt64)
                                         : NewExtra(ctx, shape, DType::kInt64);
  float* out = y.mutable_data();
  float* index = indices.mutable_data();
  const float* in = x.data();
  ForEachPoolWindow(g, [&](int64_t o, const int64_t* in_indices, int64_t count) {
    float best = -std::numeric_limits<float>::infinity();
    int64_t best_index = -1;
    for (int64_t t = 0; t < count; ++t) {
      const int64_t i = in_indices[t];
      // Strictly greater keeps the first maximum, as PyTorch does; the first NaN wins and stays.
      if (in[i] > best || (std::isnan(in[i]) && !std::isnan(best))) {
        best = in[i];
        best_index = i;
      }
    }
    out[o] = best;
    index[o] = static_cast<float>(best_index);
  });
  return OutputWithSavedExtras(std::move(y), args.num_outputs, {{"indices", std::move(indices)}});
}

Expected<InputGradients> MaxPoolBackward(const KernelContext& ctx, const BackwardArgs& args) {
  MEMPLAN_TRY(Tensor dy, RequireTensor(args.grad_outputs, 0, "MaxPool", "output gradient"));
  MEMPLAN_TRY(InputGradients grads, MakeGradientSlots(args, 1, "MaxPool"));
  MEMPLAN_TRY(Tensor indices, SavedOutputOrExtra(args, 1, "indices", "MaxPool"));
  if (indices.numel() != dy.numel()) return MakeError("MaxPool: indices do not match dY");
  if (!args.NeedsGrad(0)) return grads;
  Tensor dx = NewInputGradient(ctx, args, 0);
  // Float storage holds indices exactly only up to 2^24 elements per tensor.
  if (dx.numel() > (int64_t{1} << 24)) return MakeError("MaxPool: input too large for CPU indices");
  float* out = dx.mutable_data();
  // An output's index lies in its own (n, c) plane, so chunks of whole planes write disjoint
  // parts of dX. Planes are dY's elements per leading two dims.
  const int64_t planes = dy.rank() >= 2 ? dy.dim(0) * dy.dim(1) : 1;
  const int64_t plane_size = planes == 0 ? 0 : dy.numel() / planes;
  const int64_t grain = std::max<int64_t>(1, ElementwiseGrain() / std::max<int64_t>(1, plane_size));
  ParallelFor(planes, grain, [&](int64_t first_plane, int64_t last_plane) {
    for (int64_t o = first_plane * plane_size; o < last_plane * plane_size; ++o) {
      const auto i = static_cast<int64_t>(indices.data()[o]);
      if (i >= 0) out[i] += dy.data()[o];
    }
  });
  return WithRoundedGradient(std::move(grads), 0, std::move(dx));
}

// The divisor of each output: taps inside the input, or with count_include_pad also those in the
// padding (but never past the padded edge, as in PyTorch's ceil_mode windows). Host-side
// bookkeeping a GPU kernel computes on the fly, so it does not go through the allocator.
std::vector<float> AverageDivisors(const WindowGeometry& g, bool include_pad) {
  std::vector<float> divisors(static_cast<size_t>(g.h.output * g.w.output));
  float* d = divisors.data();
  auto count = [include_pad](const WindowAxis& axis, int64_t out) {
    int64_t n = 0;
    for (int64_t tap = 0; tap < axis.kernel; ++tap) {
      const int64_t i = axis.InputIndex(out, tap);
      const bool inside = include_pad ? (i >= -axis.pad_begin && i < axis.input + axis.pad_end)
                                      : (i >= 0 && i < axis.input);
      n += inside ? 1 : 0;
    }
    return n;
  };
  for (int64_t oh = 0; oh < g.h.output; ++oh) {
    for (int64_t ow = 0; ow < g.w.output; ++ow) {
      d[oh * g.w.output + ow] = static_cast<float>(count(g.h, oh) * count(g.w, ow));
    }
  }
  return divisors;
}

Expected<ForwardResult> AveragePoolForward(const KernelContext& ctx, const ForwardArgs& args) {
  MEMPLAN_TRY(Tensor x, RequireTensor(args.inputs, 0, "AveragePool", "input"));
  const Attributes& attrs = AttributesOf(args.attributes);
  MEMPLAN_TRY(WindowGeometry g, PoolGeometry("AveragePool", attrs, x.shape()));
  Tensor y = NewOutput(ctx, g.OutputShape(g.channels), x.dtype());
  const std::vector<float> divisors = AverageDivisors(g, attrs.GetInt("count_include_pad", 0) != 0);
  float* out = y.mutable_data();
  const float* in = x.data();
  ForEachPoolTap(g, [&](int64_t o, int64_t i) { out[o] += in[i]; });
  const int64_t out_plane = g.h.output * g.w.output;
  for (int64_t o = 0; o < y.numel(); ++o) out[o] /= divisors[static_cast<size_t>(o % out_plane)];
  return RoundedSingleOutput(std::move(y));
}

Expected<InputGradients> AveragePoolBackward(const KernelContext& ctx, const BackwardArgs& args) {
  return FirstInputBackward(args, 1, "AveragePool", [&](const Tensor& dy) -> Expected<Tensor> {
    const Attributes& attrs = AttributesOf(args.attributes);
    MEMPLAN_TRY(WindowGeometry g, PoolGeometry("AveragePool", attrs, args.input_shapes[0]));
    const std::vector<float> divisors =
        AverageDivisors(g, attrs.GetInt("count_include_pad", 0) != 0);
    Tensor dx = NewInputGradient(ctx, args, 0);
    float* out = dx.mutable_data();
    const float* grad = dy.data();
    const int64_t out_plane = g.h.output * g.w.output;
    ForEachPoolTap(g, [&](int64_t o, int64_t i) {
      out[i] += grad[o] / divisors[static_cast<size_t>(o % out_plane)];
    });
    return dx;
  });
}

// GlobalAveragePool: the mean over every spatial dim, kept as size-1 dims.
Expected<ForwardResult> GlobalAveragePoolForward(const KernelContext& ctx,
                                                 const ForwardArgs& args) {
  MEMPLAN_TRY(Tensor x, RequireTensor(args.inputs, 0, "GlobalAveragePool", "input"));
  if (x.rank() < 3) return MakeError("GlobalAveragePool: input must be [N, C, spatial...]");
  TensorShape shape = x.shape();
  for (size_t i = 2; i < shape.size(); ++i) shape[i] = 1;
  Tensor y = NewOutput(ctx, shape, x.dtype());
  const int64_t planes = x.dim(0) * x.dim(1);
  const int64_t size = planes == 0 ? 0 : x.numel() / planes;
  for (int64_t p = 0; p < planes; ++p) {
    float sum = 0.0f;
    for (int64_t i = 0; i < size; ++i) sum += x.data()[p * size + i];
    y.mutable_data()[p] = sum / static_cast<float>(size);
  }
  return RoundedSingleOutput(std::move(y));
}

Expected<InputGradients> GlobalAveragePoolBackward(const KernelContext& ctx,
                                                   const BackwardArgs& args) {
  return FirstInputBackward(args, 1, "GlobalAveragePool",
                            [&](const Tensor& dy) -> Expected<Tensor> {
                              Tensor dx = NewInputGradient(ctx, args, 0);
                              const int64_t planes = dy.numel();
                              const int64_t size = planes == 0 ? 0 : dx.numel() / planes;
                              for (int64_t p = 0; p < planes; ++p) {
                                const float g = dy.data()[p] / static_cast<float>(size);
                                for (int64_t i = 0; i < size; ++i)
                                  dx.mutable_data()[p * size + i] = g;
                              }
                              return dx;
                            });
}

}  // namespace

void RegisterPoolingKernels(KernelRegistry& registry) {
  registry.Register("MaxPool", &MaxPoolForward, &MaxPoolBackward);
  registry.Register("AveragePool", &AveragePoolForward, &AveragePoolBackward);
  registry.Register("GlobalAveragePool", &GlobalAveragePoolForward, &GlobalAveragePoolBackward);
}

}  // namespace memplan
