// memplan:ScaledDotProductAttention (graph/ops/sdpa_op.h): attention as PyTorch 2's
// scaled_dot_product_attention runs it with a flash-style kernel.
//
// Saved for backward (pytorch derivatives.yaml, _scaled_dot_product_flash_attention: "query, key,
// value, output, logsumexp, philox_seed, philox_offset"; _scaled_dot_product_efficient_attention
// adds attn_bias when there is a mask):
//   q, k, v (as given: under grouped-query attention the un-repeated K and V), the output,
//   logsumexp fp32 [B, H, Sq], the mask when there is one, and under dropout the RNG state
//   (philox seed + offset, two int64). No [Sq, Sk] tensor: backward recomputes the probabilities
//   tile by tile from q, k and logsumexp, so neither the scores, the probabilities nor the dropout
//   mask are ever stored, in forward or in backward.
//
// FLOPs: 2*B*H*Sq*Sk*D (q k^T) + 2*B*H*Sq*Sk*Dv (p v) + kSoftmaxFlopsPerElement per score, the
// same arithmetic as eager (a causal mask is not assumed to halve it). Backward recomputes q k^T
// and runs four more matmuls (dV, dP, dQ, dK): 5 matmuls against forward's 2, factor 2.5
// (FlashAttention-2, section 3.2). Its workspace is flash-attn's mha_bwd buffers: softmax_d fp32
// [B, H, Sq] and the fp32 dq accumulator [B, Sq, H, D].

#include <algorithm>
#include <optional>

#include "graph/ops/common_rules.h"
#include "graph/ops/op_families.h"
#include "graph/ops/op_registry.h"
#include "graph/ops/sdpa_op.h"
#include "graph/ops/shape_helpers.h"

namespace memplan {
namespace {

// Recompute of q k^T plus dV, dP, dQ, dK against forward's two matmuls.
constexpr double kFlashBackwardFactor = 2.5;
// Philox seed and offset (two int64), what the CUDA kernels keep for dropout.
constexpr int64_t kRngStateElements = 2;

// Rank 4 is [B, heads, seq, head]; rank 3 is [N, seq, head] with the heads folded into N (what
// torch 1.13's nn.MultiheadAttention exports: bmm over [B*heads, seq, head]), read as heads = 1,
// or, with a head_size attribute, [B, seq, heads*head] with the heads packed (ONNX Attention 3D).
struct SdpaDims {
  bool three_d = false;  // folded
  bool packed = false;
  Dim batch, heads, kv_heads, q_seq, kv_seq, head, v_head;
};

// The packed 3D form: heads = hidden / head_size for q, k and v alike.
Expected<std::optional<SdpaDims>> ReadPackedDims(const OpContext& ctx, const Shape& q,
                                                 const Shape& k, const Shape& v,
                                                 int64_t head_size) {
  if (ctx.attrs().GetInt(sdpa::kKeyTransposed, 0) != 0)
    return MakeError(NodeError(ctx.node, "packed 3D heads (head_size) with a transposed key"));
  SdpaDims d;
  d.packed = true;
  d.batch = q.dims[0];
  d.q_seq = q.dims[1];
  d.kv_seq = k.dims[1];
  d.head = Dim(head_size);
  auto heads = q.dims[2].DivideExactly(d.head);
  auto kv_heads = k.dims[2].DivideExactly(d.head);
  if (!heads || !kv_heads) {
    return MakeError(NodeError(ctx.node,
                               "the query and key hidden sizes are not whole heads of "
                               "head_size " +
                                   std::to_string(head_size)));
  }
  auto v_head = v.dims[2].DivideExactly(*kv_heads);
  if (!v_head) {
    return MakeError(
        NodeError(ctx.node, "the value hidden size does not split into the key heads"));
  }
  d.heads = *heads;
  d.kv_heads = *kv_heads;
  d.v_head = *v_head;
  return std::optional<SdpaDims>{d};
}

// nullopt when a shape is unknown; an error when q, k, v are not all 3D or all 4D.
Expected<std::optional<SdpaDims>> ReadSdpaDims(const OpContext& ctx) {
  MEMPLAN_TRY(auto qkv, ReadQkvInputs(ctx, "query, key and value"));
  if (!qkv) return std::optional<SdpaDims>{};
  const auto [q, k, v, rank] = *qkv;
  const int64_t head_size = ctx.attrs().GetInt(sdpa::kHeadSize, 0);
  if (head_size < 0 || (head_size > 0 && rank != 3))
    return MakeError(NodeError(ctx.node, "head_size applies to 3D inputs and must be positive"));
  if (head_size > 0) return ReadPackedDims(ctx, q->shape, k->shape, v->shape, head_size);
  const bool transposed = ctx.attrs().GetInt(sdpa::kKeyTransposed, 0) != 0;
  const size_t o = rank - 3;  // dims before [seq, head]: batch, then heads when 4D
  SdpaDims d;
  d.three_d = rank == 3;
  d.batch = q->shape.dims[0];
  d.heads = d.three_d ? Dim(1) : q->shape.dims[1];
  d.kv_heads = d.three_d ? Dim(1) : k->shape.dims[1];
  d.q_seq = q->shape.dims[o + 1];
  d.head = q->shape.dims[o + 2];
  d.kv_seq = transposed ? k->shape.dims[o + 2] : k->shape.dims[o + 1];
  d.v_head = v->shape.dims[o + 2];
  return std::optional<SdpaDims>{d};
}

Shape RowStatsShape(const SdpaDims& d) {
  return d.three_d ? Shape{{d.batch, d.q_seq}} : Shape{{d.batch, d.heads, d.q_seq}};
}

Expected<std::vector<TensorInfo>> SdpaShape(const OpContext& ctx) {
  MEMPLAN_TRY(auto dims, ReadSdpaDims(ctx));
  auto outs = EmptyOutputs(ctx);
  for (auto& o : outs) o.dtype = ctx.inputs[0].dtype;
  if (!dims || outs.empty()) return outs;
  const SdpaDims& d = *dims;
  if (d.packed) {
    outs[0].shape = Shape{{d.batch, d.q_seq, d.heads * d.v_head}};
  } else {
    outs[0].shape = d.three_d ? Shape{{d.batch, d.q_seq, d.v_head}}
                              : Shape{{d.batch, d.heads, d.q_seq, d.v_head}};
  }
  return outs;
}

OpCost SdpaCost(const OpContext& ctx) {
  auto dims = ReadSdpaDims(ctx);
  if (!dims.ok() || !dims->has_value()) return IoCost(ctx, Dim(0));
  const SdpaDims& d = **dims;
  const Dim scores = d.batch * d.heads * d.q_seq * d.kv_seq;
  return IoCost(ctx, Dim(2) * scores * d.head + Dim(2) * scores * d.v_head +
                         Dim(kSoftmaxFlopsPerElement) * scores);
}

std::vector<SavedTensor> SdpaSaved(const OpContext& ctx) {
  std::vector<SavedTensor> saved = {SaveInput(0), SaveInput(1), SaveInput(2)};
  if (ctx.has_input(3)) saved.push_back(SaveInput(3));
  saved.push_back(SaveOutput(0));
  auto dims = ReadSdpaDims(ctx);
  const Shape lse = dims.ok() && dims->has_value() ? RowStatsShape(**dims) : Shape::Unknown();
  saved.push_back(SaveExtra(sdpa::kLogSumExp, DType::kFloat32, lse));
  if (ctx.attrs().GetFloat(sdpa::kDropoutRatio, 0.0) > 0.0)
    saved.push_back(SaveExtra(sdpa::kRngState, DType::kInt64, Shape{{Dim(kRngStateElements)}}));
  return saved;
}

Dim SdpaBackwardWorkspace(const OpContext& ctx) {
  auto dims = ReadSdpaDims(ctx);
  if (!dims.ok() || !dims->has_value()) return Dim(0);
  const SdpaDims& d = **dims;
  const Dim softmax_d = RowStatsShape(d).NumElements();
  const Dim dq_accum = d.batch * d.q_seq * d.heads * d.head;
  return TensorBytes(softmax_d + dq_accum, DType::kFloat32);
}

// Where the output lies in memory, as logical [B, H, Sq, Dv] strides. The memory-efficient
// kernel (fp32, or a runtime mask) allocates it as a fresh [B, Sq, H, Dv] and returns it
// transposed (_efficient_attention_forward: at::empty({B, M, num_heads, Kv})). The flash kernel
// (fp16/bf16, no runtime mask, equal head sizes) allocates empty_like(q.transpose(1, 2)), which
// keeps q's layout when q is dense: nn.MultiheadAttention's q, a view of its packed [S, B, E]
// projection, gives an output already laid out [S, B, H, D], so its permute(2, 0, 1, 3) is dense.
// The 3D forms are row-major: heads folded into the batch, or packed, where both kernels' output,
// laid out [B, Sq, H, Dv], is the packed [B, Sq, H*Dv] itself.
bool FlashKernel(const OpContext& ctx, const SdpaDims& d) {
  const DType dtype = ctx.inputs[0].dtype;
  const bool half = dtype == DType::kFloat16 || dtype == DType::kBFloat16;
  const bool runtime_mask = ctx.has_input(3) && ctx.inputs[3].kind != ValueKind::kConstant;
  return half && !runtime_mask && d.head == d.v_head;
}

// `strides` when they lay `shape` out densely in some order of its dims (torch's
// is_non_overlapping_and_dense: what empty_like preserves), else nullopt. Size-1 dims do not count.
std::optional<Strides> DenseLayout(const Shape& shape, const Strides& strides) {
  if (strides.size() != shape.rank()) return std::nullopt;
  std::vector<size_t> order(shape.rank());
  for (size_t i = 0; i < order.size(); ++i) order[i] = i;
  do {
    Dim running(1);
    bool dense = true;
    for (size_t k = order.size(); k-- > 0 && dense;) {
      const size_t d = order[k];
      if (shape.dims[d] == Dim(1)) continue;
      dense = strides[d] == running;
      running = running * shape.dims[d];
    }
    if (dense) return strides;
  } while (std::next_permutation(order.begin(), order.end()));
  return std::nullopt;
}

std::vector<Strides> SdpaOutputStrides(const OpContext& ctx) {
  auto dims = ReadSdpaDims(ctx);
  if (!dims.ok() || !dims->has_value() || (*dims)->three_d || (*dims)->packed) return {Strides()};
  const SdpaDims& d = **dims;
  const Strides fresh{d.q_seq * d.heads * d.v_head, d.v_head, d.heads * d.v_head, Dim(1)};
  // q's layout is known only when views made it. A q that an op wrote (row-major to memplan) is in
  // torch laid out like that op's inputs (TensorIterator keeps their memory order, which memplan
  // does not follow): HF's rotary embedding on the transposed projection leaves q [B, S, H, D],
  // as the fresh layout says.
  if (!FlashKernel(ctx, d) || ctx.inputs[0].strides.empty()) return {fresh};
  return {DenseLayout(ctx.inputs[0].shape, ctx.inputs[0].strides).value_or(fresh)};
}

OpSchema SdpaSchema() {
  OpSchema s;
  s.op_type = sdpa::kOpType;
  s.stochastic = true;  // dropout_p > 0 drops inside the kernel
  s.domain = sdpa::kDomain;
  s.infer_shapes = SdpaShape;
  s.cost = SdpaCost;
  s.SetSaved(DerivativesSource("_scaled_dot_product_flash_attention saves query, key, value, "
                               "output, logsumexp (fp32 [B, H, Sq]), philox_seed, philox_offset; "
                               "_scaled_dot_product_efficient_attention also attn_bias (the "
                               "mask)"),
             WhenDifferentiable(SdpaSaved));
  // q, k and v receive gradients; the mask does not (attention masks never require grad).
  s.gradient_inputs = GradientsAtSlots({0, 1, 2});
  s.backward_workspace = SdpaBackwardWorkspace;
  s.output_strides = SdpaOutputStrides;
  s.backward_flops_factor = kFlashBackwardFactor;
  s.SetAmp(AmpCategory::kFp16Safe,
           AutocastSource("lower_precision_fp list (scaled_dot_product_attention)"));
  return s;
}

}  // namespace

void RegisterSdpaOps(OpRegistry& registry) { registry.Register(SdpaSchema()); }

}  // namespace memplan
