// memplan:ScaledDotProductAttention (graph/ops/sdpa_op.h) as a reference flash-style kernel:
// forward keeps only the output and the fp32 logsumexp per query row; backward recomputes the
// probabilities from q, k and logsumexp row by row, so no [Sq, Sk] buffer exists at any time
// (one row of Sk floats is the only scratch). Dropout's mask is regenerated from the node's seed
// (the executor gives forward and backward the same one), as the CUDA kernels regenerate theirs
// from the saved philox seed and offset.
//
// Gradients agree with the eager sub-graph up to float rounding (the sums run in a different
// order), not bitwise.

#include <algorithm>
#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include "graph/ops/sdpa_op.h"
#include "runtime/counter_rng.h"
#include "runtime/cpu/kernel_registry.h"
#include "runtime/cpu/kernels/broadcast.h"
#include "runtime/cpu/kernels/kernel_families.h"
#include "runtime/cpu/kernels/kernel_util.h"

namespace memplan {
namespace {

constexpr const char* kOp = "ScaledDotProductAttention";

// Whether dropout keeps score `index`: uniform in [0, 1) from (seed, index), >= ratio.
bool Kept(uint64_t seed, int64_t index, double ratio) {
  return DropoutUniform(seed, index) >= ratio;
}

// Everything both passes read: geometry, scale, mask and dropout.
struct Attention {
  Tensor q, k, v, mask;
  bool three_d = false;
  int64_t batch = 0, heads = 0, kv_heads = 0, q_seq = 0, kv_seq = 0, head = 0, v_head = 0;
  bool key_transposed = false;
  double scale = 1.0;
  std::string mask_mode;
  float fill = -std::numeric_limits<float>::infinity();
  bool causal = false;
  double dropout = 0.0;               // 0 when not training
  std::vector<int64_t> mask_strides;  // the mask's element strides through [B, H, Sq, Sk]

  int64_t KvHead(int64_t h) const { return h / (heads / kv_heads); }
  // Packed 3D ([B, S, H*D]) keeps a sequence position's heads side by side, so one head's rows
  // are `heads * head` apart; 4D and folded 3D keep each head's [S, D] block contiguous.
  bool packed = false;
  int64_t QRowStride() const { return packed ? heads * head : head; }
  int64_t KRowStride() const { return packed ? kv_heads * head : head; }
  int64_t VRowStride() const { return packed ? kv_heads * v_head : v_head; }
  // Offsets of row (b, h, i) of q and of the output, and of head (b, kh) of k and v.
  int64_t QRow(int64_t b, int64_t h, int64_t i) const {
    return packed ? (b * q_seq + i) * heads * head + h * head
                  : ((b * heads + h) * q_seq + i) * head;
  }
  int64_t OutRow(int64_t b, int64_t h, int64_t i) const {
    return packed ? (b * q_seq + i) * heads * v_head + h * v_head
                  : ((b * heads + h) * q_seq + i) * v_head;
  }
  int64_t KBase(int64_t b, int64_t kh) const {
    return packed ? b * kv_seq * kv_heads * head + kh * head : (b * kv_heads + kh) * kv_seq * head;
  }
  int64_t VBase(int64_t b, int64_t kh) const {
    return packed ? b * kv_seq * kv_heads * v_head + kh * v_head
                  : (b * kv_heads + kh) * kv_seq * v_head;
  }
  // Element (j, d) of a key head: [Sk, D] or, transposed, [D, Sk].
  int64_t KAt(int64_t j, int64_t d) const {
    return key_transposed ? d * kv_seq + j : j * KRowStride() + d;
  }
  // Element (j, d) of a value head.
  int64_t VAt(int64_t j, int64_t d) const { return j * VRowStride() + d; }
  // logsumexp [B, H, Sq] in every form.
  int64_t StatIndex(int64_t b, int64_t h, int64_t i) const { return (b * heads + h) * q_seq + i; }
  int64_t ScoreIndex(int64_t b, int64_t h, int64_t i, int64_t j) const {
    return ((b * heads + h) * q_seq + i) * kv_seq + j;
  }

  // The masked, scaled scores of row (b, h, i) into `s` (Sk entries). `filled[j]` (when given)
  // says score j was replaced by the Where fill: it does not depend on q or k, so no gradient
  // flows through it (this matters for a fully masked row, where every p is 1/Sk).
  void Scores(int64_t b, int64_t h, int64_t i, std::vector<float>& s,
              std::vector<char>* filled = nullptr) const {
    if (filled != nullptr) filled->assign(s.size(), 0);
    const float* qr = q.data() + QRow(b, h, i);
    const float* kh = k.data() + KBase(b, KvHead(h));
    for (int64_t j = 0; j < kv_seq; ++j) {
      double dot = 0.0;
      for (int64_t d = 0; d < head; ++d) dot += static_cast<double>(qr[d]) * kh[KAt(j, d)];
      float x = static_cast<float>(dot * scale);
      if (mask.defined()) {
        const int64_t at =
            b * mask_strides[0] + h * mask_strides[1] + i * mask_strides[2] + j * mask_strides[3];
        const float m = mask.data()[at];
        if (mask_mode == sdpa::kMaskAdd) x += m;
        const bool replaced = (mask_mode == sdpa::kMaskKeep && m == 0.0f) ||
                              (mask_mode == sdpa::kMaskFillWhere && m != 0.0f);
        if (replaced) x = fill;
        if (replaced && filled != nullptr) (*filled)[static_cast<size_t>(j)] = 1;
      }
      if (causal && j > i) x = -std::numeric_limits<float>::infinity();
      s[static_cast<size_t>(j)] = x;
    }
  }
  // Dropout's factor for score (b, h, i, j): 0 when dropped, 1/(1-p) when kept, 1 without.
  float DropFactor(uint64_t seed, int64_t b, int64_t h, int64_t i, int64_t j) const {
    if (dropout <= 0.0) return 1.0f;
    return Kept(seed, ScoreIndex(b, h, i, j), dropout) ? static_cast<float>(1.0 / (1.0 - dropout))
                                                       : 0.0f;
  }
};

Expected<Attention> ReadAttention(const KernelContext& ctx, const Attributes* attributes,
                                  const std::vector<Tensor>& inputs) {
  Attention a;
  MEMPLAN_TRY(a.q, RequireTensor(inputs, 0, kOp, "query"));
  MEMPLAN_TRY(a.k, RequireTensor(inputs, 1, kOp, "key"));
  MEMPLAN_TRY(a.v, RequireTensor(inputs, 2, kOp, "value"));
  a.mask = OptionalTensor(inputs, 3);
  const Attributes& attrs = AttributesOf(attributes);
  const int64_t rank = a.q.rank();
  if ((rank != 3 && rank != 4) || a.k.rank() != rank || a.v.rank() != rank)
    return MakeError(std::string(kOp) + ": query, key and value must all be 3D or all be 4D");
  a.key_transposed = attrs.GetInt(sdpa::kKeyTransposed, 0) != 0;
  const int64_t head_size = attrs.GetInt(sdpa::kHeadSize, 0);
  a.packed = head_size > 0;
  if (head_size < 0 || (a.packed && (rank != 3 || a.key_transposed)))
    return MakeError(std::string(kOp) +
                     ": head_size applies to 3D inputs with an untransposed key");
  a.three_d = rank == 3 && !a.packed;
  const int64_t o = rank - 3;
  a.batch = a.q.dim(0);
  int64_t key_head = 0;
  if (a.packed) {
    a.head = head_size;
    a.heads = a.q.dim(2) / head_size;
    a.kv_heads = a.k.dim(2) / head_size;
    a.q_seq = a.q.dim(1);
    a.kv_seq = a.k.dim(1);
    a.v_head = a.kv_heads > 0 ? a.v.dim(2) / a.kv_heads : 0;
    // Whole heads everywhere: the divisions above must be exact.
    key_head = a.q.dim(2) % head_size == 0 && a.k.dim(2) % head_size == 0 && a.kv_heads > 0 &&
                       a.v.dim(2) % a.kv_heads == 0
                   ? head_size
                   : -1;
  } else {
    a.heads = a.three_d ? 1 : a.q.dim(1);
    a.kv_heads = a.three_d ? 1 : a.k.dim(1);
    a.q_seq = a.q.dim(o + 1);
    a.head = a.q.dim(o + 2);
    a.kv_seq = a.key_transposed ? a.k.dim(o + 2) : a.k.dim(o + 1);
    a.v_head = a.v.dim(o + 2);
    key_head = a.key_transposed ? a.k.dim(o + 1) : a.k.dim(o + 2);
  }
  const int64_t v_seq = a.v.dim(a.packed ? 1 : o + 1);
  if (a.kv_heads <= 0 || a.heads % a.kv_heads != 0 || key_head != a.head || v_seq != a.kv_seq ||
      a.k.dim(0) != a.batch || a.v.dim(0) != a.batch || (rank == 4 && a.v.dim(1) != a.kv_heads)) {
    return MakeError(std::string(kOp) + ": query " + ShapeToString(a.q.shape()) + ", key " +
                     ShapeToString(a.k.shape()) + " and value " + ShapeToString(a.v.shape()) +
                     " do not form an attention");
  }
  a.scale = attrs.GetFloat(sdpa::kScale, 1.0);
  const Tensor multiplier = OptionalTensor(inputs, 4);
  const Tensor divisor = OptionalTensor(inputs, 5);
  if (multiplier.defined()) a.scale *= multiplier.data()[0];
  if (divisor.defined()) a.scale /= divisor.data()[0];
  a.mask_mode = attrs.GetString(sdpa::kMaskMode, sdpa::kMaskNone);
  a.fill =
      static_cast<float>(attrs.GetFloat(sdpa::kMaskFill, -std::numeric_limits<double>::infinity()));
  a.causal = attrs.GetInt(sdpa::kIsCausal, 0) != 0;
  a.dropout = ctx.training ? attrs.GetFloat(sdpa::kDropoutRatio, 0.0) : 0.0;
  if (!(a.dropout >= 0.0 && a.dropout < 1.0))
    return MakeError(std::string(kOp) + ": dropout ratio " + std::to_string(a.dropout) +
                     " is outside [0, 1)");
  if (a.mask.defined()) {
    // Scores as [B, H, Sq, Sk] (3D: [N, 1, Sq, Sk]); the mask right-aligned against them.
    const TensorShape scores = {a.batch, a.heads, a.q_seq, a.kv_seq};
    TensorShape mask_shape = a.mask.shape();
    if (a.three_d && mask_shape.size() == 3) mask_shape.insert(mask_shape.begin() + 1, 1);
    MEMPLAN_TRY(TensorShape joint, BroadcastShapes(mask_shape, scores, kOp));
    if (joint != scores)
      return MakeError(std::string(kOp) + ": mask " + ShapeToString(a.mask.shape()) +
                       " does not broadcast to the scores " + ShapeToString(scores));
    a.mask_strides = BroadcastStrides(mask_shape, scores);
  }
  return a;
}

TensorShape OutputShape(const Attention& a) {
  if (a.packed) return TensorShape{a.batch, a.q_seq, a.heads * a.v_head};
  return a.three_d ? TensorShape{a.batch, a.q_seq, a.v_head}
                   : TensorShape{a.batch, a.heads, a.q_seq, a.v_head};
}

Expected<ForwardResult> SdpaForward(const KernelContext& ctx, const ForwardArgs& args) {
  MEMPLAN_TRY(Attention a, ReadAttention(ctx, args.attributes, args.inputs));
  Tensor y = NewOutput(ctx, OutputShape(a), a.q.dtype());
  Tensor lse = NewExtra(ctx, {a.batch, a.heads, a.q_seq}, DType::kFloat32);
  std::vector<float> s(static_cast<size_t>(a.kv_seq));
  std::vector<double> acc(static_cast<size_t>(a.v_head));
  for (int64_t b = 0; b < a.batch; ++b) {
    for (int64_t h = 0; h < a.heads; ++h) {
      const float* vh = a.v.data() + a.VBase(b, a.KvHead(h));
      for (int64_t i = 0; i < a.q_seq; ++i) {
        a.Scores(b, h, i, s);
        float max = -std::numeric_limits<float>::infinity();
        for (float x : s) max = std::max(max, x);
        double sum = 0.0;
        for (float x : s) sum += std::exp(static_cast<double>(x) - max);
        const double log_sum = max + std::log(sum);
        lse.mutable_data()[a.StatIndex(b, h, i)] = static_cast<float>(log_sum);
        std::fill(acc.begin(), acc.end(), 0.0);
        for (int64_t j = 0; j < a.kv_seq; ++j) {
          const double p = std::exp(static_cast<double>(s[static_cast<size_t>(j)]) - log_sum) *
                           a.DropFactor(ctx.seed, b, h, i, j);
          if (p == 0.0) continue;
          for (int64_t d = 0; d < a.v_head; ++d) acc[static_cast<size_t>(d)] += p * vh[a.VAt(j, d)];
        }
        float* yr = y.mutable_data() + a.OutRow(b, h, i);
        for (int64_t d = 0; d < a.v_head; ++d)
          yr[d] = static_cast<float>(acc[static_cast<size_t>(d)]);
      }
    }
  }
  std::vector<std::pair<std::string, Tensor>> extras = {{sdpa::kLogSumExp, std::move(lse)}};
  if (AttributesOf(args.attributes).GetFloat(sdpa::kDropoutRatio, 0.0) > 0.0) {
    // The CUDA kernels' philox seed and offset; this kernel regenerates its mask from the node's
    // seed, so the buffer only holds the seed's low 24 bits (floats are exact to 2^24).
    Tensor rng = NewExtra(ctx, {2}, DType::kInt64);
    rng.mutable_data()[0] = static_cast<float>(ctx.seed & 0xFFFFFFu);
    extras.emplace_back(sdpa::kRngState, std::move(rng));
  }
  ForwardResult result;
  RoundToOwnDType(y);
  result.outputs.push_back(std::move(y));
  for (auto& [name, t] : extras) result.extras.emplace(name, std::move(t));
  return result;
}

// Per query row: p = exp(s - lse), dP = dO v^T (through dropout), D = rowsum(dO * O),
// dS = p * (dP - D) * scale; dQ += dS k, dK += dS^T q, dV += p_dropped^T dO.
Expected<InputGradients> SdpaBackward(const KernelContext& ctx, const BackwardArgs& args) {
  MEMPLAN_TRY(Tensor dy, RequireTensor(args.grad_outputs, 0, kOp, "output gradient"));
  MEMPLAN_TRY(Attention a, ReadAttention(ctx, args.attributes, args.inputs));
  MEMPLAN_TRY(Tensor out, RequireTensor(args.outputs, 0, kOp, "saved output"));
  auto it = args.extras.find(sdpa::kLogSumExp);
  if (it == args.extras.end()) return MakeError(std::string(kOp) + ": backward needs logsumexp");
  const Tensor& lse = it->second;
  MEMPLAN_TRY(InputGradients grads, MakeGradientSlots(args, 3, kOp));
  // fp64 accumulators, rounded into the gradients' dtypes at the end.
  std::vector<double> dq(static_cast<size_t>(a.q.numel()), 0.0);
  std::vector<double> dk(static_cast<size_t>(a.k.numel()), 0.0);
  std::vector<double> dv(static_cast<size_t>(a.v.numel()), 0.0);
  std::vector<float> s(static_cast<size_t>(a.kv_seq));
  std::vector<char> filled;
  for (int64_t b = 0; b < a.batch; ++b) {
    for (int64_t h = 0; h < a.heads; ++h) {
      const int64_t kh = a.KvHead(h);
      const float* kp = a.k.data() + a.KBase(b, kh);
      const float* vp = a.v.data() + a.VBase(b, kh);
      for (int64_t i = 0; i < a.q_seq; ++i) {
        const float* dor = dy.data() + a.OutRow(b, h, i);
        const float* orow = out.data() + a.OutRow(b, h, i);
        const float* qr = a.q.data() + a.QRow(b, h, i);
        double big_d = 0.0;
        for (int64_t d = 0; d < a.v_head; ++d) big_d += static_cast<double>(dor[d]) * orow[d];
        a.Scores(b, h, i, s, &filled);
        const double log_sum = lse.data()[a.StatIndex(b, h, i)];
        for (int64_t j = 0; j < a.kv_seq; ++j) {
          const double p = std::exp(static_cast<double>(s[static_cast<size_t>(j)]) - log_sum);
          if (p == 0.0) continue;
          const double drop = a.DropFactor(ctx.seed, b, h, i, j);
          double dp = 0.0;
          for (int64_t d = 0; d < a.v_head; ++d) {
            dp += static_cast<double>(dor[d]) * vp[a.VAt(j, d)];
            dv[static_cast<size_t>(a.VBase(b, kh) + a.VAt(j, d))] += p * drop * dor[d];
          }
          if (filled[static_cast<size_t>(j)]) continue;
          const double ds = p * (dp * drop - big_d) * a.scale;
          for (int64_t d = 0; d < a.head; ++d) {
            dq[static_cast<size_t>(a.QRow(b, h, i) + d)] += ds * kp[a.KAt(j, d)];
            dk[static_cast<size_t>(a.KBase(b, kh) + a.KAt(j, d))] += ds * qr[d];
          }
        }
      }
    }
  }
  const std::vector<double>* sums[3] = {&dq, &dk, &dv};
  for (size_t input = 0; input < 3; ++input) {
    if (!args.NeedsGrad(input)) continue;
    Tensor g = NewInputGradient(ctx, args, input);
    const std::vector<double>& sum = *sums[input];
    for (int64_t e = 0; e < g.numel(); ++e)
      g.mutable_data()[e] = static_cast<float>(sum[static_cast<size_t>(e)]);
    PutRoundedGradient(grads, input, std::move(g));
  }
  return grads;
}

}  // namespace

void RegisterSdpaKernels(KernelRegistry& registry) {
  registry.Register(sdpa::kOpType, &SdpaForward, &SdpaBackward, sdpa::kDomain);
}

}  // namespace memplan
