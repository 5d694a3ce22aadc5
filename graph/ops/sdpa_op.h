#pragma once
// The fused attention op memplan plans for under `--attention sdpa`: what PyTorch 2 runs for
// torch.nn.functional.scaled_dot_product_attention with a flash-style kernel. It is not an ONNX
// op; the attention recogniser (graph/attention/attention_fusion.h) writes it in place of the
// eager sub-graph MatMul -> scale -> mask -> Softmax -> Dropout -> MatMul, and of the ONNX
// Attention op, so the registry (graph/ops/sdpa_ops.cc), the simulator and the CPU kernel
// (runtime/cpu/kernels/sdpa.cc) all read one node.
//
//   memplan:ScaledDotProductAttention(query, key, value, mask?, scale_multiplier?, scale_divisor?)
//     -> output
//     query  [B, H, Sq, D]
//     key    [B, Hkv, Sk, D]   or, with key_transposed = 1, [B, Hkv, D, Sk] (the exporter's k^T)
//     value  [B, Hkv, Sk, Dv]      H must be a multiple of Hkv (grouped-query / multi-query)
//     mask   broadcastable to [B, H, Sq, Sk]; how it applies is `mask_mode`
//     scale_multiplier / scale_divisor: one-element constants whose value only the executor knows
//            (torch's 1/sqrt(k.size(-1)) computed from a Shape sub-graph); scores are multiplied /
//            divided by them besides the `scale` attribute
//     output [B, H, Sq, Dv]
//   Also 3D, two ways:
//     folded (no head_size): [N, S, D] with the heads folded into N (bmm-style exports), no
//            grouped-query then;
//     packed (head_size = D > 0): [B, S, H*D] with the heads side by side in the last axis, as
//            the ONNX Attention op takes 3D inputs (q_num_heads = hidden / D); key [B, Sk, Hkv*D],
//            value [B, Sk, Hkv*Dv], output [B, Sq, H*Dv]. The head count follows from the
//            hidden size, so a tensor-parallel rank holding H/T whole heads reads them right.
//   scores = scale * q k^T;  masked per mask_mode / is_causal;  p = softmax(scores, -1);
//   p = dropout(p, dropout_ratio);  output = p v
//
// This header names the op and its attributes once for all three.

namespace memplan::sdpa {

inline constexpr const char* kDomain = "memplan";
inline constexpr const char* kOpType = "ScaledDotProductAttention";

// Attributes (all optional; defaults in brackets).
inline constexpr const char* kScale = "scale";                   // float [1]
inline constexpr const char* kKeyTransposed = "key_transposed";  // int [0]
inline constexpr const char* kMaskMode = "mask_mode";            // string [kMaskNone]
inline constexpr const char* kMaskFill = "mask_fill";            // float [-inf]
inline constexpr const char* kDropoutRatio = "dropout_ratio";    // float [0]
inline constexpr const char* kIsCausal = "is_causal";            // int [0]: key j > query i masked
inline constexpr const char* kHeadSize = "head_size";  // int [0]: 3D inputs packed, heads this wide

// mask_mode values: how input 3 applies to the scores.
inline constexpr const char* kMaskNone = "none";  // no mask input
inline constexpr const char* kMaskAdd = "add";    // scores + mask          (Add)
inline constexpr const char* kMaskKeep = "keep";  // where(mask, scores, fill)  (Where, HF causal)
inline constexpr const char* kMaskFillWhere = "fill";  // where(mask, fill, scores)  (masked_fill)

// Names of the tensors forward keeps for backward besides q, k, v, output (and the mask).
inline constexpr const char* kLogSumExp = "logsumexp";  // fp32 [B, H, Sq]
inline constexpr const char* kRngState = "rng_state";   // int64 [2]: philox seed and offset

}  // namespace memplan::sdpa
