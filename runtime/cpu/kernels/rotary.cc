// RotaryEmbedding, ai.onnx opset 23 and ONNX Runtime's com.microsoft contrib op: each head vector
// of X has its first rotary_embedding_dim elements rotated in pairs by the angle of its token's
// position, the rest passed through. A pair (x1, x2) is either adjacent (interleaved = 1: x[2i],
// x[2i + 1]) or split across the halves (interleaved = 0: x[i], x[i + rot/2]); with
// c = cos[b, s, i] and s = sin[b, s, i]
//   y1 = c x1 - s x2,   y2 = s x1 + c x2.
// X is [B, heads, S, head] or [B, S, heads * head]. The two ops differ only in input order and
// in how they find the heads and the token positions (RotaryOp); the gather, the rotation and
// its backward are one implementation.
//
// ai.onnx (X, cos_cache, sin_cache, position_ids?): a 3D X needs the num_heads attribute. The
// caches are [max_pos, >= rot/2] gathered by position_ids [B, S], or already per token
// [B, S, >= rot/2] without them (a batch of 1 broadcasts in either). Only the first rot/2 entries
// of a cache row are read.
//
// com.microsoft (input, position_ids, cos_cache, sin_cache), as ORT's CPU kernel reads it
// (contrib_ops/cpu/bert/rotary_embedding.cc and rotary_embedding_helper.h): position_ids are
// required, [B, S] or one offset (token s at offset + s); the caches are [max_pos, rot/2]. Without
// rotary_embedding_dim the head size is twice the caches' width and num_heads, when not given,
// is the hidden size over it; with rotary_embedding_dim num_heads is required and the head size
// is the hidden size over it. `scale` is accepted and not applied, as ORT's kernels do: it would
// scale caches the op computes itself, and ORT computes none (it rejects a sequence longer than
// the caches). is_packed_batching (ragged batches, CUDA only in ORT) is rejected.
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

// What differs between the two ops.
struct RotaryOp {
  std::string_view name;  // the prefix of its errors
  size_t cos, sin, positions;
  size_t required_inputs;
  // The layout from the attributes, X's shape and the width of the cos/sin rows.
  Expected<RotaryLayout> (*layout)(const Attributes& attrs, const TensorShape& x, int64_t width);
  // ORT's position ids: required, and one offset as well as [B, S].
  bool ort_positions;
};

// The rotary dims `rot` (0: the whole head) of `l`: an even size of at most the head size.
Status SetRotaryDim(std::string_view name, int64_t rot, RotaryLayout& l) {
  if (rot == 0) rot = l.head;
  if (rot < 0 || rot > l.head || rot % 2 != 0)
    return MakeError(std::string(name) + ": rotary_embedding_dim " + std::to_string(rot) +
                     " is not an even size of at most the head size " + std::to_string(l.head));
  l.rot_half = rot / 2;
  return OkStatus();
}

// [B, heads, S, head] with heads and head from X's shape.
RotaryLayout FourDLayout(const TensorShape& x, bool interleaved) {
  RotaryLayout l;
  l.interleaved = interleaved;
  l.batch = x[0];
  l.heads = x[1];
  l.seq = x[2];
  l.head = x[3];
  return l;
}

Expected<RotaryLayout> OnnxLayoutOf(const Attributes& attrs, const TensorShape& x,
                                    int64_t /*width: any, only the first rot/2 are read*/) {
  const bool interleaved = attrs.GetInt("interleaved", 0) != 0;
  RotaryLayout l;
  if (x.size() == 4) {
    l = FourDLayout(x, interleaved);
  } else if (x.size() == 3) {
    l.interleaved = interleaved;
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
  MEMPLAN_RETURN_IF_ERROR(
      SetRotaryDim("RotaryEmbedding", attrs.GetInt("rotary_embedding_dim", 0), l));
  return l;
}

constexpr std::string_view kMicrosoftName = "com.microsoft RotaryEmbedding";

Error MicrosoftError(const std::string& what) {
  return MakeError(std::string(kMicrosoftName) + ": " + what);
}

// ORT's rotary_embedding_helper.h CheckInputs, with the heads and head size it derives required
// to be X's own (ORT would stride through X by them).
Expected<RotaryLayout> MicrosoftLayoutOf(const Attributes& attrs, const TensorShape& x,
                                         int64_t width) {
  if (attrs.GetInt("is_packed_batching", 0) != 0)
    return MicrosoftError("is_packed_batching (ragged batches) is not supported");
  const bool interleaved = attrs.GetInt("interleaved", 0) != 0;
  const int64_t num_heads = attrs.GetInt("num_heads", 0);
  const int64_t rot = attrs.GetInt("rotary_embedding_dim", 0);
  if (num_heads < 0 || (rot > 0 && num_heads == 0))
    return MicrosoftError("rotary_embedding_dim " + std::to_string(rot) +
                          " needs a positive num_heads, not " + std::to_string(num_heads));
  RotaryLayout l;
  if (x.size() == 4) {
    l = FourDLayout(x, interleaved);
    if (num_heads != 0 && num_heads != l.heads)
      return MicrosoftError("num_heads " + std::to_string(num_heads) + " is not the " +
                            std::to_string(l.heads) + " heads of the 4D input " + ShapeToString(x));
  } else if (x.size() == 3) {
    l.interleaved = interleaved;
    l.three_d = true;
    l.batch = x[0];
    l.seq = x[1];
    const int64_t hidden = x[2];
    if (rot == 0) {
      l.head = 2 * width;
      l.heads = num_heads != 0 ? num_heads : (l.head > 0 ? hidden / l.head : 0);
    } else {
      l.heads = num_heads;
      l.head = hidden / num_heads;
    }
    if (l.head <= 0 || l.heads * l.head != hidden)
      return MicrosoftError("a 3D input " + ShapeToString(x) + " is not " +
                            std::to_string(l.heads) + " heads of size " + std::to_string(l.head) +
                            (rot == 0 ? " (twice the caches' width)" : " (hidden / num_heads)"));
  } else {
    return MicrosoftError("input " + ShapeToString(x) + " is neither 3D nor 4D");
  }
  if (rot == 0 && 2 * width != l.head)
    return MicrosoftError("the caches' width " + std::to_string(width) +
                          " is not half the head size " + std::to_string(l.head));
  MEMPLAN_RETURN_IF_ERROR(SetRotaryDim(kMicrosoftName, rot, l));
  // ORT steps through the cache rows by rot/2 whatever their width: only rot/2 reads them as rows.
  if (width != l.rot_half)
    return MicrosoftError("the caches' width " + std::to_string(width) +
                          " is not rotary_embedding_dim / 2 = " + std::to_string(l.rot_half));
  return l;
}

// Per-token cos and sin rows, [B or 1, S, width]: the caches themselves (no position ids) or
// the rows forward gathered.
Status CheckRows(std::string_view name, const RotaryLayout& l, const Tensor& cos,
                 const Tensor& sin) {
  const TensorShape& c = cos.shape();
  if (c != sin.shape())
    return MakeError(std::string(name) + ": cos " + ShapeToString(c) + " and sin " +
                     ShapeToString(sin.shape()) + " differ");
  if (c.size() != 3 || (c[0] != l.batch && c[0] != 1) || c[1] != l.seq || c[2] < l.rot_half)
    return MakeError(std::string(name) + ": per-token cos/sin " + ShapeToString(c) +
                     " do not fit [" + std::to_string(l.batch) + ", " + std::to_string(l.seq) +
                     ", " + std::to_string(l.rot_half) + "]");
  return OkStatus();
}

// The cache row of every token, and the [B or 1, S] they form.
struct TokenPositions {
  TensorShape shape;
  std::vector<int64_t> index;
};

Expected<TokenPositions> PositionsOf(const RotaryOp& op, const RotaryLayout& l,
                                     const Tensor& positions) {
  const TensorShape batch_seq = {l.batch, l.seq};
  if (op.ort_positions && positions.numel() == 1 && positions.rank() <= 1) {
    // One offset for every sequence of the batch: token s is at offset + s.
    TokenPositions t{{1, l.seq}, {}};
    const int64_t offset = positions.ToInt64Vector()[0];
    for (int64_t s = 0; s < l.seq; ++s) t.index.push_back(offset + s);
    return t;
  }
  if (positions.rank() != 2 || (op.ort_positions && positions.shape() != batch_seq))
    return MakeError(std::string(op.name) + ": position_ids " + ShapeToString(positions.shape()) +
                     " are not [batch, seq]" +
                     (op.ort_positions ? " = " + ShapeToString(batch_seq) + " or one offset" : ""));
  return TokenPositions{positions.shape(), positions.ToInt64Vector()};
}

// cache[index], t.shape + [width], for each cache; an error for a position outside the cache.
Expected<std::pair<Tensor, Tensor>> GatherRows(const KernelContext& ctx, const RotaryOp& op,
                                               const TokenPositions& t, const Tensor& cos,
                                               const Tensor& sin) {
  if (cos.rank() != 2 || cos.shape() != sin.shape())
    return MakeError(std::string(op.name) +
                     ": with position_ids both caches are [max_pos, rot/2], not " +
                     ShapeToString(cos.shape()) + " and " + ShapeToString(sin.shape()));
  const int64_t max_pos = cos.dim(0), width = cos.dim(1);
  TensorShape shape = t.shape;
  shape.push_back(width);
  Tensor cos_rows = NewExtra(ctx, shape, cos.dtype());
  Tensor sin_rows = NewExtra(ctx, shape, sin.dtype());
  for (size_t i = 0; i < t.index.size(); ++i) {
    const int64_t p = t.index[i];
    if (p < 0 || p >= max_pos)
      return MakeError(std::string(op.name) + ": position id " + std::to_string(p) +
                       " is outside the caches' " + std::to_string(max_pos) + " positions");
    const auto to = static_cast<int64_t>(i) * width;
    for (int64_t k = 0; k < width; ++k) {
      cos_rows.mutable_data()[to + k] = cos.data()[p * width + k];
      sin_rows.mutable_data()[to + k] = sin.data()[p * width + k];
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

// The width of the cos/sin rows: a cache's last dim.
int64_t RowWidth(const TensorShape& cache) { return cache.empty() ? 0 : cache.back(); }

Expected<ForwardResult> RotaryForward(const RotaryOp& op, const KernelContext& ctx,
                                      const ForwardArgs& args) {
  MEMPLAN_TRY(Tensor x, RequireTensor(args.inputs, 0, op.name, "input"));
  MEMPLAN_TRY(Tensor cos, RequireTensor(args.inputs, op.cos, op.name, "input"));
  MEMPLAN_TRY(Tensor sin, RequireTensor(args.inputs, op.sin, op.name, "input"));
  Tensor positions = OptionalTensor(args.inputs, op.positions);
  if (op.ort_positions) {
    MEMPLAN_TRY(positions, RequireTensor(args.inputs, op.positions, op.name, "input"));
  }
  MEMPLAN_TRY(RotaryLayout layout,
              op.layout(AttributesOf(args.attributes), x.shape(), RowWidth(cos.shape())));
  std::vector<std::pair<std::string, Tensor>> extras;
  if (positions.defined()) {
    MEMPLAN_TRY(TokenPositions tokens, PositionsOf(op, layout, positions));
    MEMPLAN_TRY(auto rows, GatherRows(ctx, op, tokens, cos, sin));
    cos = rows.first;
    sin = rows.second;
    extras = {{"gathered_cos", std::move(rows.first)}, {"gathered_sin", std::move(rows.second)}};
  }
  MEMPLAN_RETURN_IF_ERROR(CheckRows(op.name, layout, cos, sin));
  Tensor y = NewOverwrittenOutput(ctx, x.shape(), x.dtype());
  Rotate(layout, cos, sin, x.data(), y.mutable_data(), 1.0);
  return OutputWithSavedExtras(std::move(y), args.num_outputs, std::move(extras));
}

Expected<InputGradients> RotaryBackward(const RotaryOp& op, const KernelContext& ctx,
                                        const BackwardArgs& args) {
  MEMPLAN_TRY(Tensor dy, RequireTensor(args.grad_outputs, 0, op.name, "output gradient"));
  MEMPLAN_TRY(InputGradients grads, MakeGradientSlots(args, op.required_inputs, op.name));
  if (!args.NeedsGrad(0)) return grads;
  Tensor cos, sin;
  if (args.InputPresent(op.positions)) {
    MEMPLAN_TRY(cos, RequireExtra(args, "gathered_cos", op.name));
    MEMPLAN_TRY(sin, RequireExtra(args, "gathered_sin", op.name));
  } else {
    MEMPLAN_TRY(cos, RequireTensor(args.inputs, op.cos, op.name, "saved cos_cache"));
    MEMPLAN_TRY(sin, RequireTensor(args.inputs, op.sin, op.name, "saved sin_cache"));
  }
  MEMPLAN_TRY(RotaryLayout layout, op.layout(AttributesOf(args.attributes), args.input_shapes[0],
                                             RowWidth(cos.shape())));
  MEMPLAN_RETURN_IF_ERROR(CheckRows(op.name, layout, cos, sin));
  if (dy.shape() != args.input_shapes[0])
    return MakeError(std::string(op.name) + ": output gradient " + ShapeToString(dy.shape()) +
                     " is not the input's " + ShapeToString(args.input_shapes[0]));
  Tensor dx = NewOverwrittenInputGradient(ctx, args, 0);
  Rotate(layout, cos, sin, dy.data(), dx.mutable_data(), -1.0);
  return WithRoundedGradient(std::move(grads), 0, std::move(dx));
}

constexpr RotaryOp kOnnxRotary = {"RotaryEmbedding", 1, 2, 3, 3, &OnnxLayoutOf, false};
constexpr RotaryOp kMicrosoftRotary = {kMicrosoftName, 2, 3, 1, 4, &MicrosoftLayoutOf, true};

}  // namespace

void RegisterRotaryKernels(KernelRegistry& registry) {
  registry.Register("RotaryEmbedding", &ForwardFor<kOnnxRotary, RotaryForward>,
                    &BackwardFor<kOnnxRotary, RotaryBackward>);
  registry.Register("RotaryEmbedding", &ForwardFor<kMicrosoftRotary, RotaryForward>,
                    &BackwardFor<kMicrosoftRotary, RotaryBackward>, "com.microsoft");
}

}  // namespace memplan
