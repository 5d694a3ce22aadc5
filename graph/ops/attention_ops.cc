// Attention (ai.onnx opset 23), ONNX Runtime's com.microsoft MultiHeadAttention and
// GroupQueryAttention, and RotaryEmbedding (ai.onnx opset 23 and com.microsoft).
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

#include <algorithm>

#include "graph/ops/common_rules.h"
#include "graph/ops/op_families.h"
#include "graph/ops/op_registry.h"
#include "graph/ops/shape_helpers.h"

namespace memplan {
namespace {

struct AttentionDims {
  bool three_d = false;
  Dim batch, q_heads, kv_heads, q_seq, kv_seq, total_seq, head, v_head;
  // Where K, V and the past live among the node's inputs (ai.onnx Attention's slots by default);
  // a packed K/V (slot equal to Q's or to K's) is one storage, saved once.
  size_t key_slot = 1, value_slot = 2, past_key_slot = 4, past_value_slot = 5;
};

// Reads one op form's inputs and attributes into AttentionDims: nullopt when a needed shape is
// unknown, an error for ranks or attributes its spec rejects.
using AttentionDimsReader = Expected<std::optional<AttentionDims>> (*)(const OpContext&);

// Splits a 3D hidden size into `heads` heads; nullopt when it does not divide.
std::optional<Dim> PerHead(const Dim& hidden, int64_t heads) {
  if (heads <= 0) return std::nullopt;
  return hidden.DivideExactly(Dim(heads));
}

// nullopt when a needed shape is unknown; an error for ranks or attributes the spec rejects.
Expected<std::optional<AttentionDims>> ReadAttentionDims(const OpContext& ctx) {
  MEMPLAN_TRY(auto qkv, ReadQkvInputs(ctx, "Q, K and V"));
  if (!qkv) return std::optional<AttentionDims>{};
  const auto [q, k, v, rank] = *qkv;
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

Expected<std::vector<TensorInfo>> AttentionShape(const OpContext& ctx, AttentionDimsReader read) {
  MEMPLAN_TRY(auto dims, read(ctx));
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

OpCost AttentionCost(const OpContext& ctx, AttentionDimsReader read) {
  auto dims = read(ctx);
  if (!dims.ok() || !dims->has_value()) return IoCost(ctx, Dim(0));
  const AttentionDims& d = **dims;
  const Dim scores = ScoresShape(d).NumElements();
  return IoCost(ctx, Dim(2) * scores * d.head + Dim(2) * scores * d.v_head +
                         Dim(kSoftmaxFlopsPerElement) * scores);
}

// K (or V) as the eager matmul sees it: the present (past ++ new) when there is a past, repeated
// to q_heads under grouped-query attention; nullopt when it is a view of a tensor already saved
// (packed into Q's input, or V packed with K).
std::optional<SavedTensor> SavedKeyOrValue(const OpContext& ctx, const AttentionDims& d,
                                           size_t input, size_t past, size_t present,
                                           const char* repeated_name, const Dim& head,
                                           bool input_already_saved) {
  if (!(d.kv_heads == d.q_heads)) {
    return SaveExtra(repeated_name, ctx.inputs[0].dtype,
                     Shape{{d.batch, d.q_heads, d.total_seq, head}});
  }
  if (ctx.has_input(past) && present < ctx.outputs.size() && ctx.outputs[present].present)
    return SaveOutput(static_cast<int>(present));
  if (input_already_saved) return std::nullopt;
  return SaveInput(static_cast<int>(input));
}

// Eager attention's saved set (see the top of this file) for any form the reader understands.
std::vector<SavedTensor> EagerAttentionSaved(const OpContext& ctx, AttentionDimsReader read) {
  std::vector<SavedTensor> saved;
  auto dims = read(ctx);
  if (!dims.ok() || !dims->has_value()) {
    // Shapes unknown: the inputs are what can be named.
    for (size_t i = 0; i < 3; ++i)
      if (ctx.has_input(i)) saved.push_back(SaveInput(static_cast<int>(i)));
    return saved;
  }
  const AttentionDims& d = **dims;
  saved.push_back(SaveInput(0));
  if (auto k = SavedKeyOrValue(ctx, d, d.key_slot, d.past_key_slot, 1, "repeated_key", d.head,
                               /*input_already_saved=*/d.key_slot == 0))
    saved.push_back(*k);
  if (auto v =
          SavedKeyOrValue(ctx, d, d.value_slot, d.past_value_slot, 2, "repeated_value", d.v_head,
                          /*input_already_saved=*/d.value_slot == 0 || d.value_slot == d.key_slot))
    saved.push_back(*v);
  saved.push_back(SaveExtra("attention_probs", ctx.inputs[0].dtype, ScoresShape(d)));
  return saved;
}

// Eager attention's matmuls and the fused kernel alike run in fp16/bf16 under autocast.
const char* const kAttentionAmp = "lower_precision_fp list (matmul, scaled_dot_product_attention)";

OpSchema AttentionSchema() {
  OpSchema s;
  s.op_type = "Attention";
  s.min_inputs = 3;  // Q, K, V
  s.infer_shapes = [](const OpContext& ctx) { return AttentionShape(ctx, ReadAttentionDims); };
  s.cost = [](const OpContext& ctx) { return AttentionCost(ctx, ReadAttentionDims); };
  s.SetSaved(
      DerivativesSource("eager attention = matmul (saves self, other) + _softmax (saves result) + "
                        "matmul (saves self, other): Q, K, P [B, q_heads, q_seq, total_seq] and "
                        "V; grouped-query K/V repeated to q_heads (repeat_kv) before the matmuls"),
      WhenDifferentiable(
          [](const OpContext& ctx) { return EagerAttentionSaved(ctx, ReadAttentionDims); }));
  // Q, K, V and the past receive gradients; the mask (slot 3) does not.
  s.gradient_inputs = GradientsAtSlots({0, 1, 2, 4, 5});
  s.backward_flops_factor = kContractionBackwardFactor;
  s.SetAmp(AmpCategory::kFp16Safe, AutocastSource(kAttentionAmp));
  return s;
}

// ---------------------------------------------------------------- com.microsoft attention
// ONNX Runtime's transformer optimizer writes these; they are modelled like Attention above (the
// eager saved set), read from their own input layouts. Both have 3D outputs [B, q_seq, N * v_head]
// and present_key/present_value [B, kv_heads, total_seq, head].

// Positive integer attribute `name`, or an error naming the node.
Expected<int64_t> PositiveAttr(const OpContext& ctx, const char* name) {
  const int64_t value = ctx.attrs().GetInt(name, 0);
  if (value <= 0) return MakeError(NodeError(ctx.node, std::string(name) + " must be positive"));
  return value;
}

// Total sequence = past (when given) + new keys.
Expected<bool> AddPast(const OpContext& ctx, AttentionDims& d) {
  if (!ctx.has_input(d.past_key_slot)) return true;
  const Shape& past = ctx.inputs[d.past_key_slot].shape;
  if (!past.known) return false;
  if (past.rank() != 4) return MakeError(NodeError(ctx.node, "past_key must be 4D"));
  d.total_seq = past.dims[2] + d.kv_seq;
  return true;
}

// MultiHeadAttention(query, key?, value?, bias?, key_padding_mask?, attention_bias?, past_key?,
// past_value?), attribute num_heads = N. Forms: query [B, S, D] with key/value [B, L, D] and
// [B, L, D_v] (or 4D [B, N, L, H], a cross-attention cache, taken as is); query packed with K and
// V as [B, S, N, 3, H] (key absent); key packed with V as [B, L, N, 2, H] (value absent).
Expected<std::optional<AttentionDims>> ReadMultiHeadDims(const OpContext& ctx) {
  MEMPLAN_TRY(const TensorInfo* q, RequiredInput(ctx, 0));
  MEMPLAN_TRY(int64_t heads, PositiveAttr(ctx, "num_heads"));
  if (!q->shape.known) return std::optional<AttentionDims>{};
  AttentionDims d;
  d.three_d = true;
  d.past_key_slot = 6;
  d.past_value_slot = 7;
  d.q_heads = d.kv_heads = Dim(heads);
  d.batch = q->shape.dims.empty() ? Dim(0) : q->shape.dims[0];
  if (q->shape.rank() == 5) {  // packed QKV [B, S, N, 3, H]
    d.q_seq = d.kv_seq = q->shape.dims[1];
    d.head = d.v_head = q->shape.dims[4];
    d.key_slot = d.value_slot = 0;
  } else if (q->shape.rank() == 3) {
    d.q_seq = q->shape.dims[1];
    auto head = PerHead(q->shape.dims[2], heads);
    if (!head)
      return MakeError(NodeError(ctx.node, "query hidden size is not divisible by num_heads"));
    d.head = *head;
    MEMPLAN_TRY(const TensorInfo* k, RequiredInput(ctx, 1));
    if (!k->shape.known) return std::optional<AttentionDims>{};
    if (k->shape.rank() == 5) {  // packed KV [B, L, N, 2, H]
      d.kv_seq = k->shape.dims[1];
      d.v_head = k->shape.dims[4];
      d.value_slot = 1;
    } else {
      MEMPLAN_TRY(const TensorInfo* v, RequiredInput(ctx, 2));
      if (!v->shape.known) return std::optional<AttentionDims>{};
      if (k->shape.rank() == 3 && v->shape.rank() == 3) {
        d.kv_seq = k->shape.dims[1];
        auto v_head = PerHead(v->shape.dims[2], heads);
        if (!v_head)
          return MakeError(NodeError(ctx.node, "value hidden size is not divisible by num_heads"));
        d.v_head = *v_head;
      } else if (k->shape.rank() == 4 && v->shape.rank() == 4) {
        d.kv_seq = k->shape.dims[2];
        d.v_head = v->shape.dims[3];
      } else {
        return MakeError(NodeError(ctx.node, "key and value must both be 3D or both be 4D"));
      }
    }
  } else {
    return MakeError(
        NodeError(ctx.node, "query must be 3D [B, S, D] or packed 5D [B, S, N, 3, H]"));
  }
  d.total_seq = d.kv_seq;
  MEMPLAN_TRY(bool known, AddPast(ctx, d));
  if (!known) return std::optional<AttentionDims>{};
  return std::optional<AttentionDims>{d};
}

// GroupQueryAttention(query, key?, value?, past_key?, past_value?, seqlens_k,
// total_sequence_length, cos_cache?, sin_cache?, ...), attributes num_heads = N and
// kv_num_heads = N_kv (dividing N). query [B, S, N * H] with key/value [B, S, N_kv * H], or Q, K
// and V packed in query [B, S, (N + 2 * N_kv) * H] (key absent). With a past, total_seq =
// past_seq + S (the non-shared-buffer form, which is what a training step would run).
Expected<std::optional<AttentionDims>> ReadGroupQueryDims(const OpContext& ctx) {
  MEMPLAN_TRY(const TensorInfo* q, RequiredInput(ctx, 0));
  MEMPLAN_TRY(int64_t heads, PositiveAttr(ctx, "num_heads"));
  MEMPLAN_TRY(int64_t kv_heads, PositiveAttr(ctx, "kv_num_heads"));
  if (heads % kv_heads != 0)
    return MakeError(NodeError(ctx.node, "num_heads must be a multiple of kv_num_heads"));
  if (!q->shape.known) return std::optional<AttentionDims>{};
  if (q->shape.rank() != 3) return MakeError(NodeError(ctx.node, "query must be 3D [B, S, D]"));
  AttentionDims d;
  d.three_d = true;
  d.past_key_slot = 3;
  d.past_value_slot = 4;
  d.q_heads = Dim(heads);
  d.kv_heads = Dim(kv_heads);
  d.batch = q->shape.dims[0];
  d.q_seq = d.kv_seq = q->shape.dims[1];
  const bool packed = !ctx.has_input(1);
  auto head = PerHead(q->shape.dims[2], packed ? heads + 2 * kv_heads : heads);
  if (!head)
    return MakeError(NodeError(ctx.node, "query hidden size is not divisible by the heads"));
  d.head = d.v_head = *head;
  if (packed) d.key_slot = d.value_slot = 0;
  d.total_seq = d.kv_seq;
  MEMPLAN_TRY(bool known, AddPast(ctx, d));
  if (!known) return std::optional<AttentionDims>{};
  return std::optional<AttentionDims>{d};
}

OpSchema ContribAttentionSchema(const char* op_type, size_t min_inputs, AttentionDimsReader read,
                                std::vector<size_t> gradient_slots) {
  OpSchema s;
  s.op_type = op_type;
  s.min_inputs = min_inputs;
  s.domain = "com.microsoft";
  s.infer_shapes = [read](const OpContext& ctx) { return AttentionShape(ctx, read); };
  s.cost = [read](const OpContext& ctx) { return AttentionCost(ctx, read); };
  s.SetSaved(
      DerivativesSource("as ai.onnx Attention (eager: Q, K, softmax output P, V; grouped-query "
                        "K/V repeated to num_heads); packed Q/K/V are one storage, saved once"),
      WhenDifferentiable([read](const OpContext& ctx) { return EagerAttentionSaved(ctx, read); }));
  s.gradient_inputs = GradientsAtSlots(std::move(gradient_slots));
  s.backward_flops_factor = kContractionBackwardFactor;
  s.SetAmp(AmpCategory::kFp16Safe, AutocastSource(kAttentionAmp));
  return s;
}

// ---------------------------------------------------------------- RotaryEmbedding
// ai.onnx-23: (X, cos_cache, sin_cache, position_ids?); com.microsoft: (input, position_ids,
// cos_cache, sin_cache). Y has X's shape. With position ids the caches are [max_pos, rot/2] and
// gathered per token to position_ids.shape + [rot/2] ([1, S, rot/2] for com.microsoft's
// one-element offset); without, they are already [B, S, rot/2].
// Saved follows the fused rotary kernel (and eager `x*cos + rotate_half(x)*sin`, whose muls save
// only the non-trained operand): the gathered cos and sin; nothing of X.
std::vector<SavedTensor> RotarySaved(const OpContext& ctx, size_t cos_slot, size_t sin_slot,
                                     std::optional<size_t> position_slot) {
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
    const Shape& x = ctx.inputs[0].shape;
    Shape shape = Shape::Unknown();
    if (positions.known && cache.shape.known && cache.shape.rank() >= 1) {
      if (positions.rank() == 2) {
        shape = positions;
      } else if (x.known && x.rank() >= 3) {
        // com.microsoft's one offset (token s at offset + s): one row per token of the
        // sequence, X's dim -2, shared by the batch.
        shape = Shape{{1, x.dims[x.rank() - 2]}};
      }
      if (shape.known) shape.dims.push_back(cache.shape.dims.back());
    }
    saved.push_back(SaveExtra(std::string("gathered_") + name, cache.dtype, shape));
  }
  return saved;
}

OpSchema RotarySchema(const char* domain, size_t cos_slot, size_t sin_slot,
                      std::optional<size_t> position_slot) {
  OpSchema s;
  s.op_type = "RotaryEmbedding";
  s.domain = domain;
  // Every slot up to the caches is required (ai.onnx: X, cos, sin; com.microsoft: input,
  // position_ids, cos, sin).
  s.min_inputs = std::max(cos_slot, sin_slot) + 1;
  s.infer_shapes = [](const OpContext& ctx) -> Expected<std::vector<TensorInfo>> {
    MEMPLAN_TRY(const TensorInfo* x, RequiredInput(ctx, 0));
    return SingleOutput(x->dtype, x->shape);
  };
  // Two multiplies and one add per element.
  s.cost = PerOutputElementCostRule(3 * kSimpleFlops);
  s.SetSaved(DerivativesSource("mul.Tensor saves only the operand whose partner requires grad: "
                               "x*cos + rotate_half(x)*sin keeps cos and sin (gathered by "
                               "position), not x"),
             WhenDifferentiable([=](const OpContext& ctx) {
               return RotarySaved(ctx, cos_slot, sin_slot, position_slot);
             }));
  s.gradient_inputs = GradientsAtSlots({0});
  s.backward_flops_factor = kElementwiseBackwardFactor;
  s.SetAmp(AmpCategory::kFollowInputs, AutocastSource(kNotAutocastListed));
  return s;
}

}  // namespace

void RegisterAttentionOps(OpRegistry& registry) {
  registry.Register(AttentionSchema());
  // Gradients: query, key, value, bias and the past (MHA); query, key, value and the past (GQA).
  // MultiHeadAttention needs only the query (packed Q/K/V); GroupQueryAttention's seqlens_k and
  // total_sequence_length follow four optional inputs.
  registry.Register(ContribAttentionSchema("MultiHeadAttention", 1, ReadMultiHeadDims,
                                           /*gradient_slots=*/{0, 1, 2, 3, 6, 7}));
  registry.Register(ContribAttentionSchema("GroupQueryAttention", 7, ReadGroupQueryDims,
                                           /*gradient_slots=*/{0, 1, 2, 3, 4}));
  registry.Register(RotarySchema("", /*cos_slot=*/1, /*sin_slot=*/2, /*position_slot=*/3));
  registry.Register(RotarySchema("com.microsoft", /*cos_slot=*/2, /*sin_slot=*/3,
                                 /*position_slot=*/1));
}

}  // namespace memplan
