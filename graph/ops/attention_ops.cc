// Attention (ai.onnx opset 23) and RotaryEmbedding (ai.onnx opset 23 and com.microsoft).
//
// Attention(Q, K, V, attn_mask?, past_key?, past_value?) -> (Y, present_key?, present_value?,
// qk_matmul_output?). Q/K/V are 4D [B, heads, seq, head_size] or 3D [B, seq, heads*head_size]
// with the q_num_heads / kv_num_heads attributes. With a past, K and V are appended to it:
// total_seq = past_seq + kv_seq. Shapes (spec):
//   Y             4D [B, q_heads, q_seq, v_head]   3D [B, q_seq, q_heads * v_head]
//   present_key   [B, kv_heads, total_seq, head]   present_value [B, kv_heads, total_seq, v_head]
//   qk_matmul_output [B, q_heads, q_seq, total_seq]
//
// Saved for backward follows eager attention (what PyTorch runs for a hand-written attention
// block; SDPA's memory-efficient kernels would save less): matmul(Q, K^T) saves Q and K, softmax
// saves its output P [B, q_heads, q_seq, total_seq], matmul(P, V) saves P (the same tensor) and V.
// With grouped-query attention (kv_heads < q_heads) eager code repeats K and V to q_heads first
// (repeat_kv), so the saved K and V are those repeated copies. The additive mask and the scale
// save nothing (add, and mul by a Python scalar).
//
// FLOPs: 2*B*q_heads*q_seq*total*head (QK^T) + 2*B*q_heads*q_seq*total*v_head (PV) +
// kSoftmaxFlopsPerElement per score.

#include "graph/ops/common_rules.h"
#include "graph/ops/op_families.h"
#include "graph/ops/op_registry.h"
#include "graph/ops/shape_helpers.h"

namespace memplan {
namespace {

struct AttentionDims {
  bool three_d = false;
  Dim batch, q_heads, kv_heads, q_seq, kv_seq, total_seq, head, v_head;
};

// Splits a 3D hidden size into `heads` heads; nullopt when it does not divide.
std::optional<Dim> PerHead(const Dim& hidden, int64_t heads) {
  if (heads <= 0) return std::nullopt;
  return hidden.DivideExactly(Dim(heads));
}

// nullopt when a needed shape is unknown; an error for ranks or attributes the spec rejects.
Expected<std::optional<AttentionDims>> ReadAttentionDims(const OpContext& ctx) {
  MEMPLAN_TRY(const TensorInfo* q, RequiredInput(ctx, 0));
  MEMPLAN_TRY(const TensorInfo* k, RequiredInput(ctx, 1));
  MEMPLAN_TRY(const TensorInfo* v, RequiredInput(ctx, 2));
  if (!q->shape.known || !k->shape.known || !v->shape.known) return std::optional<AttentionDims>{};
  const size_t rank = q->shape.rank();
  if ((rank != 3 && rank != 4) || k->shape.rank() != rank || v->shape.rank() != rank)
    return MakeError(NodeError(ctx.node, "Q, K and V must all be 3D or all be 4D"));
  AttentionDims d;
  d.three_d = rank == 3;
  d.batch = q->shape.dims[0];
  if (d.three_d) {
    const int64_t qh = ctx.attrs().GetInt("q_num_heads", 0);
    const int64_t kvh = ctx.attrs().GetInt("kv_num_heads", 0);
    if (qh <= 0 || kvh <= 0)
      return MakeError(NodeError(ctx.node, "3D inputs need positive q_num_heads and kv_num_heads"));
    auto head = PerHead(q->shape.dims[2], qh);
    auto v_head = PerHead(v->shape.dims[2], kvh);
    if (!head || !v_head)
      return MakeError(NodeError(ctx.node, "hidden sizes are not divisible by the head counts"));
    d.q_heads = Dim(qh);
    d.kv_heads = Dim(kvh);
    d.q_seq = q->shape.dims[1];
    d.kv_seq = k->shape.dims[1];
    d.head = *head;
    d.v_head = *v_head;
  } else {
    d.q_heads = q->shape.dims[1];
    d.kv_heads = k->shape.dims[1];
    d.q_seq = q->shape.dims[2];
    d.kv_seq = k->shape.dims[2];
    d.head = q->shape.dims[3];
    d.v_head = v->shape.dims[3];
  }
  d.total_seq = d.kv_seq;
  if (ctx.has_input(4)) {
    const Shape& past = ctx.inputs[4].shape;
    if (!past.known) return std::optional<AttentionDims>{};
    if (past.rank() != 4) return MakeError(NodeError(ctx.node, "past_key must be 4D"));
    d.total_seq = past.dims[2] + d.kv_seq;
  }
  return std::optional<AttentionDims>{d};
}

Shape ScoresShape(const AttentionDims& d) {
  return Shape{{d.batch, d.q_heads, d.q_seq, d.total_seq}};
}

Expected<std::vector<TensorInfo>> AttentionShape(const OpContext& ctx) {
  MEMPLAN_TRY(auto dims, ReadAttentionDims(ctx));
  auto outs = EmptyOutputs(ctx);
  const DType dtype = ctx.inputs[0].dtype;
  for (auto& o : outs) o.dtype = dtype;
  if (!dims) return outs;
  const AttentionDims& d = *dims;
  if (!outs.empty()) {
    outs[0].shape = d.three_d ? Shape{{d.batch, d.q_seq, d.q_heads * d.v_head}}
                              : Shape{{d.batch, d.q_heads, d.q_seq, d.v_head}};
  }
  if (outs.size() > 1) outs[1].shape = Shape{{d.batch, d.kv_heads, d.total_seq, d.head}};
  if (outs.size() > 2) outs[2].shape = Shape{{d.batch, d.kv_heads, d.total_seq, d.v_head}};
  if (outs.size() > 3) outs[3].shape = ScoresShape(d);
  return outs;
}

OpCost AttentionCost(const OpContext& ctx) {
  auto dims = ReadAttentionDims(ctx);
  if (!dims.ok() || !dims->has_value()) return IoCost(ctx, Dim(0));
  const AttentionDims& d = **dims;
  const Dim scores = ScoresShape(d).NumElements();
  return IoCost(ctx, Dim(2) * scores * d.head + Dim(2) * scores * d.v_head +
                         Dim(kSoftmaxFlopsPerElement) * scores);
}

// K (or V) as the eager matmul sees it: the present (past ++ new) when there is a past, repeated
// to q_heads under grouped-query attention.
SavedTensor SavedKeyOrValue(const OpContext& ctx, const AttentionDims& d, int input, int present,
                            const char* repeated_name, const Dim& head) {
  if (!(d.kv_heads == d.q_heads)) {
    return SaveExtra(repeated_name, ctx.inputs[0].dtype,
                     Shape{{d.batch, d.q_heads, d.total_seq, head}});
  }
  if (ctx.has_input(static_cast<size_t>(input) + 3) &&
      static_cast<size_t>(present) < ctx.outputs.size() && ctx.outputs[present].present)
    return SaveOutput(present);
  return SaveInput(input);
}

OpSchema AttentionSchema() {
  OpSchema s;
  s.op_type = "Attention";
  s.infer_shapes = AttentionShape;
  s.cost = AttentionCost;
  s.saved_for_backward = WhenDifferentiable([](const OpContext& ctx) {
    std::vector<SavedTensor> saved;
    auto dims = ReadAttentionDims(ctx);
    if (!dims.ok() || !dims->has_value()) {
      // Shapes unknown: the inputs are what can be named.
      for (int i = 0; i < 3; ++i) saved.push_back(SaveInput(i));
      return saved;
    }
    const AttentionDims& d = **dims;
    saved.push_back(SaveInput(0));
    saved.push_back(SavedKeyOrValue(ctx, d, 1, 1, "repeated_key", d.head));
    saved.push_back(SavedKeyOrValue(ctx, d, 2, 2, "repeated_value", d.v_head));
    saved.push_back(SaveExtra("attention_probs", ctx.inputs[0].dtype, ScoresShape(d)));
    return saved;
  });
  // Q, K, V and the past receive gradients; the mask (slot 3) does not.
  s.gradient_inputs = [](const OpContext& ctx) {
    std::vector<bool> grads(ctx.inputs.size(), false);
    for (size_t i : {0, 1, 2, 4, 5})
      if (i < grads.size()) grads[i] = InputRequiresGrad(ctx, i);
    return grads;
  };
  s.backward_flops_factor = kContractionBackwardFactor;
  s.amp = AmpCategory::kFp16Safe;
  s.saved_source = std::string(kDerivativesYaml) +
                   ": eager attention = matmul (saves self, other) + _softmax (saves result) + "
                   "matmul (saves self, other): Q, K, P [B, q_heads, q_seq, total_seq] and V; "
                   "grouped-query K/V repeated to q_heads (repeat_kv) before the matmuls";
  s.amp_source = std::string(kAutocastLists) +
                 ": lower_precision_fp list (matmul, scaled_dot_product_attention)";
  return s;
}

// ---------------------------------------------------------------- RotaryEmbedding
// ai.onnx-23: (X, cos_cache, sin_cache, position_ids?); com.microsoft: (input, position_ids,
// cos_cache, sin_cache). Y has X's shape. With position ids the caches are [max_pos, rot/2] and
// gathered per token to position_ids.shape + [rot/2]; without, they are already [B, S, rot/2].
// Saved follows the fused rotary kernel (and eager `x*cos + rotate_half(x)*sin`, whose muls save
// only the non-trained operand): the gathered cos and sin; nothing of X.
OpSchema RotarySchema(const char* domain, size_t cos_slot, size_t sin_slot,
                      std::optional<size_t> position_slot) {
  OpSchema s;
  s.op_type = "RotaryEmbedding";
  s.domain = domain;
  s.infer_shapes = [](const OpContext& ctx) -> Expected<std::vector<TensorInfo>> {
    MEMPLAN_TRY(const TensorInfo* x, RequiredInput(ctx, 0));
    return SingleOutput(x->dtype, x->shape);
  };
  // Two multiplies and one add per element.
  s.cost = [](const OpContext& ctx) { return PerOutputElementCost(ctx, 3 * kSimpleFlops); };
  s.saved_for_backward = WhenDifferentiable([=](const OpContext& ctx) {
    std::vector<SavedTensor> saved;
    for (auto [slot, name] : {std::pair{cos_slot, "cos"}, std::pair{sin_slot, "sin"}}) {
      if (!ctx.has_input(slot)) continue;
      const TensorInfo& cache = ctx.inputs[slot];
      const bool gathered = position_slot && ctx.has_input(*position_slot);
      if (!gathered) {
        saved.push_back(SaveInput(static_cast<int>(slot)));
        continue;
      }
      const Shape& positions = ctx.inputs[*position_slot].shape;
      Shape shape = Shape::Unknown();
      if (positions.known && cache.shape.known && cache.shape.rank() >= 1) {
        shape = positions;
        shape.dims.push_back(cache.shape.dims.back());
      }
      saved.push_back(SaveExtra(std::string("gathered_") + name, cache.dtype, shape));
    }
    return saved;
  });
  s.gradient_inputs = [](const OpContext& ctx) {
    std::vector<bool> grads(ctx.inputs.size(), false);
    if (!grads.empty()) grads[0] = InputRequiresGrad(ctx, 0);
    return grads;
  };
  s.backward_flops_factor = kElementwiseBackwardFactor;
  s.amp = AmpCategory::kFollowInputs;
  s.saved_source = std::string(kDerivativesYaml) +
                   ": mul.Tensor saves only the operand whose partner requires grad: x*cos + "
                   "rotate_half(x)*sin keeps cos and sin (gathered by position), not x";
  s.amp_source = std::string(kAutocastLists) + ": not listed, runs in its input's dtype";
  return s;
}

}  // namespace

void RegisterAttentionOps(OpRegistry& registry) {
  registry.Register(AttentionSchema());
  registry.Register(RotarySchema("", /*cos_slot=*/1, /*sin_slot=*/2, /*position_slot=*/3));
  registry.Register(RotarySchema("com.microsoft", /*cos_slot=*/2, /*sin_slot=*/3,
                                 /*position_slot=*/1));
}

}  // namespace memplan
