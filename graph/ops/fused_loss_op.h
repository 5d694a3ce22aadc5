#pragma once
// The fused loss memplan plans for under `--fused-loss`: Liger Kernel's
// LigerFusedLinearCrossEntropyFunction (liger_kernel/ops/fused_linear_cross_entropy.py), the LM
// head and the cross entropy in one op that never materialises the [B, S, V] logits. It is not an
// ONNX op; the rewrite in analyzer/derivation/fused_loss_plan.h writes it in place of the head
// node(s) and the registry entry (graph/ops/fused_loss_ops.cc) states its memory. This header names
// the op, its attributes and the chunk rule once for both.
//
//   memplan:FusedLinearCrossEntropy(input, weight, target, bias?) -> loss
//     input  [..., H]  the hidden states the head reads (BT = product of the leading dims rows)
//     weight [H, V] (transposed_weight = 0: MatMul(h, W)) or [V, H] (transposed_weight = 1:
//            MatMul(h, Transpose(W)) as torch.onnx writes a tied or nn.Linear head, Gemm transB)
//     target int64 [...]: one class id per row (-100 ignored)
//     bias   [V]
//     loss   fp32 scalar: the mean cross entropy over the rows
//
// What Liger's forward does (fused_linear_cross_entropy_forward): grad_input = zeros_like(input)
// [BT, H], grad_weight = zeros_like(weight) [V, H], grad_bias = zeros_like(bias) [V],
// loss_1d = zeros(BT, fp32), target_mask = target != ignore_index (bool [BT]); then per chunk of
// rows: logits_chunk = input_chunk @ weight.t() [chunk, V] (the cross-entropy kernel overwrites it
// with its gradient in place), grad_input[rows] = grad_logits_chunk @ weight, grad_weight +=
// torch.mm(grad_logits_chunk.t(), input_chunk) (a [V, H] product; torch >= 2.8 on sm >= 8
// accumulates half logits into an fp32 grad_weight with addmm(out_dtype=float32) instead). The
// gradients are saved for backward, which only scales them (element_mul_kernel, skipped when the
// upstream gradient is 1.0) and returns them.

#include <cstdint>

namespace memplan::fused_loss {

inline constexpr const char* kDomain = "memplan";
inline constexpr const char* kOpType = "FusedLinearCrossEntropy";

// Attribute: int, 1 when the weight input is [V, H] (read transposed), 0 when it is [H, V].
inline constexpr const char* kTransposedWeight = "transposed_weight";
// Attribute: int, the logits tile's rows per unit of the input's first (batch) dim, when the
// rewrite knew the other dims (--dim seq=...): cdiv(rows per sample, cdiv(V, H)). Absent: the
// tile's rows follow from the input's symbolic shape (fused_loss_ops.cc).
inline constexpr const char* kTileRowsPerSample = "tile_rows_per_sample";

// Names of the tensors forward saves for backward (all computed in forward).
inline constexpr const char* kGradInput = "grad_input";
inline constexpr const char* kGradWeight = "grad_weight";
inline constexpr const char* kGradBias = "grad_bias";

// Liger's chunk: inc_factor = cdiv(V, H); chunk_size = next_power_of_2(cdiv(BT, inc_factor))
// (fused_linear_cross_entropy_forward, "chunk_size = triton.next_power_of_2(triton.cdiv(BT,
// inc_factor))"), so a [chunk, V] logits tile is about as large as the [BT, H] input. The tile
// really allocated has the rows of the first chunk: min(BT, chunk_size).
// REQUIRES: rows, hidden, vocab >= 1.
int64_t ChunkRows(int64_t rows, int64_t hidden, int64_t vocab);

}  // namespace memplan::fused_loss
