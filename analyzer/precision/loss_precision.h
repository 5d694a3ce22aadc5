#pragma once
// Where the loss lives and in which dtype (--loss-dtype, --loss-chunks), stated once for the
// derivation (program_dtypes, step_emission) and the reports.
//
// PyTorch's cross entropy is nll_loss(log_softmax(logits), labels) (aten LossNLL.cpp,
// cross_entropy_loss). It allocates, per token and class, in the dtype it computes in:
//   forward   log_softmax's result, saved (derivatives.yaml: _log_softmax "result: ..." and
//             nll_loss_forward "self: nll_loss_backward(grad, self, target, ...)" keep it);
//   backward  nll_loss_backward's grad_input = zeros_like(self) (the log-probs' gradient), then
//             _log_softmax_backward_data's result (the logits' gradient) in the log-probs' dtype
//             (its input_dtype argument is the logits' dtype as cross entropy read them).
// So the loss's [tokens, vocab] buffers are three, in the dtype it computes in: nothing upcasts
// them inside the op (log_softmax(self, dim, dtype=self.scalar_type())). What upcasts is around
// the op:
//   * autocast: cross_entropy_loss, log_softmax and nll_loss are on autocast's fp32 lists
//     (autocast_mode.cpp, CUDA and CPU alike), so the logits are cast to fp32 first and the
//     fp32 gradient is cast back (ToCopyBackward);
//   * HF's causal-LM heads and torchtune's unchunked output call logits.float(): in a graph
//     exported in half, a Cast to float before the output (dtype propagation keeps it);
//   * a pure half loop (model.to(torch.bfloat16), no autocast, F.cross_entropy on the logits)
//     keeps all three in bf16.
// Master weights (DeepSpeed, Megatron) upcast the logits for the loss as well.
//
// Chunked (torchtune's CEWithChunkedOutputLoss, num_output_chunks = C): the output projection
// runs per chunk of tokens and compute_cross_entropy does F.cross_entropy(chunk.float(), ...):
// each chunk is upcast on its own, its fp32 copy freed after its loss, its fp32 log-probs saved
// (all C of them: the whole [tokens, vocab] in fp32 by the end of forward). The graph is
// rewritten to one head and one loss term per chunk (analyzer/derivation/chunked_loss_plan.h),
// so each term is an ordinary cross entropy in fp32 on its chunk; this file gives the dtype.

#include <cstdint>

#include "analyzer/precision/amp_regime.h"
#include "analyzer/vocabulary/loss_dtype.h"
#include "graph/dtype.h"
#include "graph/ops/op_schema.h"

namespace memplan {

// The dtype --loss-dtype names (kUndefined for auto).
DType FixedLossDType(LossDType requested);

// The dtype the appended loss computes in when --loss-dtype is auto, kUndefined meaning "as the
// logits are stored" (then the loss reads them without a cast):
//   fp32 regime: kUndefined;
//   autocast and master weights: the loss op's category (fp32 for the losses, which are
//     kFp32Required);
//   pure: kUndefined (a Cast to float in the graph has already made the logits fp32).
DType AutoLossDType(const AmpRegime& regime, AmpCategory loss_amp, DType logits_dtype);

// The loss dtype of a program: the override, else fp32 for a chunked loss (torchtune upcasts
// every chunk), else AutoLossDType.
DType LossComputeDType(LossDType requested, int64_t loss_chunks, const AmpRegime& regime,
                       AmpCategory loss_amp, DType logits_dtype);

}  // namespace memplan
