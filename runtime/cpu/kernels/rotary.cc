// RotaryEmbedding (ai.onnx opset 23): each head vector of X has its first rotary_embedding_dim
// elements rotated in pairs by the angle of its token's position, the rest passed through. A
// pair (x1, x2) is either adjacent (interleaved = 1: x[2i], x[2i + 1]) or split across the
// halves (interleaved = 0: x[i], x[i + rot/2]); with c = cos[b, s, i] and s = sin[b, s, i]
//   y1 = c x1 - s x2,   y2 = s x1 + c x2.
// X is [B, heads, S, head] or [B, S, heads * head] with the num_heads attribute. The caches are
// [max_pos, >= rot/2] gathered by position_ids [B, S], or already per token [B, S, >= rot/2]
// without them (a batch of 1 broadcasts in either). Only the first rot/2 entries of a cache row
// are read.
//
// Backward (X's gradient only: the registry trains only X) is the rotation by the opposite
// angle, dx1 = c dy1 + s dy2, dx2 = -s dy1 + c dy2, so it reads only the cos and sin the registry
// saves: the gathered rows ("gathered_cos", "gathered_sin", kept by forward) with position ids,
// the caches themselves without; never X.

#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "runtime/cpu/kernel_registry.h"
#include "runtime/cpu/kernels/kernel_families.h"
#include "runtime/cpu/kernels/kernel_util.h"

namespace memplan {
namespace {

constexpr std::string_view kOp = "RotaryEmbedding";
constexpr size_t kCos = 1, kSin = 2, kPositions = 3;

// Where each head vector of X lives and which cache rows rotate it.
struct RotaryLayout {
  bool three_d = false;
  int64_t batch = 0, heads = 0, seq = 0, head = 0;
  int64_t rot_half = 0;  // pairs rotated per head vector
  bool interleaved = false;

  // Offset of head vector (b, h, s) in X.
  int64_t HeadOffset(int64_t b, int64_t h, int64_t s) const {
    return three_d ? ((b * seq + s) * heads + h) * head : ((b * heads + h) * seq + s) * head;
  }
};

Expected<RotaryLayout> LayoutOf(const Attributes& attrs, const TensorShape& x) {
  RotaryLayout l;
  l.interleaved = attrs.GetInt("interleaved", 0) != 0;
  if (x.size() == 4) {
    l.batch = x[0];
    l.heads = x[1];
    l.seq = x[2];
    l.head = x[3];
  } else if (x.size() == 3) {
    l.three_d = true;
    l.batch = x[0];
    l.seq = x[1];
    l.heads = attrs.GetInt("num_heads", 0);
    if (l.heads <= 0 || x[2] % l.heads != 0)
      return MakeError("RotaryEmbedding: a 3D input " + ShapeToString(x) +
                       " needs num_heads dividing its hidden size (num_heads = " +
                       std::to_string(l.heads) + ")");
    l.head = x[2] / l.heads;
  } else {
    return MakeError("RotaryEmbedding: input " + ShapeToString(x) + " is neither 3D nor 4D");
  }
  int64_t rot = attrs.GetInt("rotary_embedding_dim", 0);
  if (rot == 0) rot = l.head;
  if (rot < 0 || rot > l.head || rot % 2 != 0)
    return MakeError("RotaryEmbedding: rotary_embedding_dim " + std::to_string(rot) +
                     " is not an even size of at most the head size " + std::to_string(l.head));
  l.rot_half = rot / 2;
  return l;
}

// Per-token cos and sin rows, [B or 1, S, width]: the caches themselves (no position ids) or
// the rows forward gathered.
Status CheckRows(const RotaryLayout& l, const Tensor& cos, const Tensor& sin) {
  const TensorShape& c = cos.shape();
  if (c != sin.shape())
    return MakeError("RotaryEmbedding: cos " + ShapeToString(c) + " and sin " +
                     ShapeToString(sin.shape()) + " differ");
  if (c.size() != 3 || (c[0] != l.batch && c[0] != 1) || c[1] != l.seq || c[2] < l.rot_half)
    return MakeError("RotaryEmbedding: per-token cos/sin " + ShapeToString(c) + " do not fit [" +
                     std::to_string(l.batch) + ", " + std::to_string(l.seq) + ", " +
                     std::to_string(l.rot_half) + "]");
  return OkStatus();
}

// cache[position_ids], position_ids.shape + [width], for each cache; an error for a position
// outside the cache.
Expected<std::pair<Tensor, Tensor>> GatherRows(const KernelContext& ctx, const Tensor& positions,
                                               const Tensor& cos, const Tensor& sin) {
  if (positions.rank() != 2)
    return MakeError("RotaryEmbedding: position_ids " + ShapeToString(positions.shape()) +
                     " are not [batch, seq]");
  if (cos.rank() != 2 || cos.shape() != sin.shape())
    return MakeError("RotaryEmbedding: with position_ids both caches are [max_pos, rot/2], not " +
                     ShapeToString(cos.shape()) + " and " + ShapeToString(sin.shape()));
  const int64_t max_pos = cos.dim(0), width = cos.dim(1);
  TensorShape shape = positions.shape();
  shape.push_back(width);
  Tensor cos_rows = NewExtra(ctx, shape, cos.dtype());
  Tensor sin_rows = NewExtra(ctx, shape, sin.dtype());
  const std::vector<int64_t> index = positions.ToInt64Vector();
  for (size_t t = 0; t < index.size(); ++t) {
    const int64_t p = index[t];
    if (p < 0 || p >= max_pos)
      return MakeError("RotaryEmbedding: position id " + std::to_string(p) +
                       " is outside the caches' " + std::to_string(max_pos) + " positions");
    const auto to = static_cast<int64_t>(t) * width;
    for (int64_t i = 0; i < width; ++i) {
      cos_rows.mutable_data()[to + i] = cos.data()[p * width + i];
      sin_rows.mutable_data()[to + i] = sin.data()[p * width + i];
    }
  }
  return std::pair{std::move(cos_rows), std::move(sin_rows)};
}

// out = in with every head vector's pairs rotated by `direction` (+1 forward, -1 backward) times
// its token's angle, the elements past the rotary dims copied.
void Rotate(const RotaryLayout& l, const Tensor& cos, const Tensor& sin, const float* in,
            float* out, double direction) {
  const int64_t width = cos.dim(2);
  const bool broadcast_batch = cos.dim(0) == 1;
  for (int64_t b = 0; b < l.batch; ++b) {
    for (int64_t s = 0; s < l.seq; ++s) {
      const int64_t row = ((broadcast_batch ? 0 : b) * l.seq + s) * width;
      const float* c = cos.data() + row;
      const float* sn = sin.data() + row;
      for (int64_t h = 0; h < l.heads; ++h) {
        const int64_t at = l.HeadOffset(b, h, s);
        const float* x = in + at;
        float* y = out + at;
        for (int64_t i = 0; i < l.rot_half; ++i) {
          const int64_t i1 = l.interleaved ? 2 * i : i;
          const int64_t i2 = l.interleaved ? 2 * i + 1 : i + l.rot_half;
          const double ci = c[i], si = direction * sn[i];
          const double x1 = x[i1], x2 = x[i2];
          y[i1] = static_cast<float>(ci * x1 - si * x2);
          y[i2] = static_cast<float>(si * x1 + ci * x2);
        }
        for (int64_t d = 2 * l.rot_half; d < l.head; ++d) y[d] = x[d];
      }
    }
  }
}

Expected<ForwardResult> RotaryForward(const KernelContext& ctx, const ForwardArgs& args) {
  MEMPLAN_TRY(Tensor x, RequireTensor(args.inputs, 0, kOp, "input"));
  MEMPLAN_TRY(Tensor cos, RequireTensor(args.inputs, kCos, kOp, "input"));
  MEMPLAN_TRY(Tensor sin, RequireTensor(args.inputs, kSin, kOp, "input"));
  const Tensor positions = OptionalTensor(args.inputs, kPositions);
  MEMPLAN_TRY(RotaryLayout layout, LayoutOf(AttributesOf(args.attributes), x.shape()));
  std::vector<std::pair<std::string, Tensor>> extras;
  if (positions.defined()) {
    MEMPLAN_TRY(auto rows, GatherRows(ctx, positions, cos, sin));
    cos = rows.first;
    sin = rows.second;
    extras = {{"gathered_cos", std::move(rows.first)}, {"gathered_sin", std::move(rows.second)}};
  }
  MEMPLAN_RETURN_IF_ERROR(CheckRows(layout, cos, sin));
  Tensor y = NewOverwrittenOutput(ctx, x.shape(), x.dtype());
  Rotate(layout, cos, sin, x.data(), y.mutable_data(), 1.0);
  return OutputWithSavedExtras(std::move(y), args.num_outputs, std::move(extras));
}

Expected<InputGradients> RotaryBackward(const KernelContext& ctx, const BackwardArgs& args) {
  MEMPLAN_TRY(Tensor dy, RequireTensor(args.grad_outputs, 0, kOp, "output gradient"));
  MEMPLAN_TRY(InputGradients grads, MakeGradientSlots(args, 3, kOp));
  if (!args.NeedsGrad(0)) return grads;
  MEMPLAN_TRY(RotaryLayout layout, LayoutOf(AttributesOf(args.attributes), args.input_shapes[0]));
  Tensor cos, sin;
  if (args.InputPresent(kPositions)) {
    MEMPLAN_TRY(cos, RequireExtra(args, "gathered_cos", kOp));
    MEMPLAN_TRY(sin, RequireExtra(args, "gathered_sin", kOp));
  } else {
    MEMPLAN_TRY(cos, RequireTensor(args.inputs, kCos, kOp, "saved cos_cache"));
    MEMPLAN_TRY(sin, RequireTensor(args.inputs, kSin, kOp, "saved sin_cache"));
  }
  MEMPLAN_RETURN_IF_ERROR(CheckRows(layout, cos, sin));
  if (dy.shape() != args.input_shapes[0])
    return MakeError("RotaryEmbedding: output gradient " + ShapeToString(dy.shape()) +
                     " is not the input's " + ShapeToString(args.input_shapes[0]));
  Tensor dx = NewOverwrittenInputGradient(ctx, args, 0);
  Rotate(layout, cos, sin, dy.data(), dx.mutable_data(), -1.0);
  RoundToOwnDType(dx);
  grads[0] = std::move(dx);
  return grads;
}

}  // namespace

void RegisterRotaryKernels(KernelRegistry& registry) {
  registry.Register("RotaryEmbedding", &RotaryForward, &RotaryBackward);
}

}  // namespace memplan
