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
// torch 1.13's nn.MultiheadAttention exports: bmm over [B*heads, seq, head]), read as heads = 1.
struct SdpaDims {
  bool three_d = false;
  Dim batch, heads, kv_heads, q_seq, kv_seq, head, v_head;
};

// nullopt when a shape is unknown; an error when q, k, v are not all 3D or all 4D.
Expected<std::optional<SdpaDims>> ReadSdpaDims(const OpContext& ctx) {
  MEMPLAN_TRY(const TensorInfo* q, RequiredInput(ctx, 0));
  MEMPLAN_TRY(const TensorInfo* k, RequiredInput(ctx, 1));
  MEMPLAN_TRY(const TensorInfo* v, RequiredInput(ctx, 2));
  if (!q->shape.known || !k->shape.known || !v->shape.known) return std::optional<SdpaDims>{};
  const size_t rank = q->shape.rank();
  if ((rank != 3 && rank != 4) || k->shape.rank() != rank || v->shape.rank() != rank)
    return MakeError(NodeError(ctx.node, "query, key and value must all be 3D or all be 4D"));
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
  outs[0].shape = d.three_d ? Shape{{d.batch, d.q_seq, d.v_head}}
                            : Shape{{d.batch, d.heads, d.q_seq, d.v_head}};
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

// Flash and memory-efficient attention allocate their output as [B, Sq, H, Dv] and return it
// transposed (pytorch's _flash_attention_forward / _efficient_attention_forward, then
// .transpose(1, 2)): element strides of [B, H, Sq, Dv] are then (Sq*H*Dv, Dv, H*Dv, 1). The 3D
// form folds the heads into the batch: row-major.
std::vector<Strides> SdpaOutputStrides(const OpContext& ctx) {
  auto dims = ReadSdpaDims(ctx);
  if (!dims.ok() || !dims->has_value() || (*dims)->three_d) return {Strides()};
  const SdpaDims& d = **dims;
  return {Strides{d.q_seq * d.heads * d.v_head, d.v_head, d.heads * d.v_head, Dim(1)}};
}

OpSchema SdpaSchema() {
  OpSchema s;
  s.op_type = sdpa::kOpType;
  s.stochastic = true;  // dropout_p > 0 drops inside the kernel
  s.domain = sdpa::kDomain;
  s.infer_shapes = SdpaShape;
  s.cost = SdpaCost;
  s.saved_for_backward = WhenDifferentiable(SdpaSaved);
  // q, k and v receive gradients; the mask does not (attention masks never require grad).
  s.gradient_inputs = [](const OpContext& ctx) {
    std::vector<bool> grads(ctx.inputs.size(), false);
    for (size_t i : {0, 1, 2})
      if (i < grads.size()) grads[i] = InputRequiresGrad(ctx, i);
    return grads;
  };
  s.backward_workspace = SdpaBackwardWorkspace;
  s.output_strides = SdpaOutputStrides;
  s.backward_flops_factor = kFlashBackwardFactor;
  s.amp = AmpCategory::kFp16Safe;
  s.saved_source = std::string(kDerivativesYaml) +
                   ": _scaled_dot_product_flash_attention saves query, key, value, output, "
                   "logsumexp (fp32 [B, H, Sq]), philox_seed, philox_offset; "
                   "_scaled_dot_product_efficient_attention also attn_bias (the mask)";
  s.amp_source =
      std::string(kAutocastLists) + ": lower_precision_fp list (scaled_dot_product_attention)";
  return s;
}

}  // namespace

void RegisterSdpaOps(OpRegistry& registry) { registry.Register(SdpaSchema()); }

}  // namespace memplan
