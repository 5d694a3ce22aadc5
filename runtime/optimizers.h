#pragma once
// Optimizers with torch.optim's update formulas, applied to one parameter at a time.
//
//   SGD       p -= lr * (g + wd p)
//   Momentum  d = g + wd p;  b = d (first step) else mu b + (1 - dampening) d;
//             p -= lr * (nesterov ? d + mu b : b)
//   Adam      d = g + wd p (L2 folded into the gradient);  m = b1 m + (1-b1) d;
//             v = b2 v + (1-b2) d^2;  p -= lr / (1 - b1^t) * m / (sqrt(v) / sqrt(1 - b2^t) + eps)
//   AdamW     p *= 1 - lr wd (decoupled decay, before the Adam update); then Adam with wd = 0
//   AdamW8bit AdamW whose moments are stored block-quantised in 8 bits (bitsandbytes' layout:
//             one fp32 absmax per 2048 elements; tensors under 4096 elements keep fp32 moments).
//             Each step dequantises a block, updates in fp32 and requantises to the nearest code
//             of bitsandbytes' dynamic map (runtime/dynamic_quantization.h: signed for m,
//             unsigned for v). Paged AdamW8bit updates identically (paging moves memory, not
//             numbers).
//   Lion      c = b1 m + (1-b1) g;  p *= 1 - lr wd;  p -= lr sign(c);  m = b2 m + (1-b2) g
//             (Chen et al. 2023; betas 0.9, 0.99)
//
// State lives in buffers allocated under MemoryCategory::kOptimizerState with the names, shapes
// and dtypes analyzer/program/optimizer_state.h states: none for SGD, the momentum buffer for
// Momentum, the two moments for Adam/AdamW (fp32, the parameter's shape), one moment for Lion.

#include <cstdint>
#include <optional>
#include <string_view>
#include <vector>

#include "analyzer/vocabulary/optimizer_kind.h"
#include "graph/expected.h"
#include "runtime/allocator.h"
#include "runtime/tensor.h"

namespace memplan {

struct OptimizerOptions {
  OptimizerKind kind = OptimizerKind::kSgd;
  double learning_rate = 1e-3;  // torch.optim.Adam's default
  double momentum = 0.9;        // kMomentum only
  double dampening = 0.0;       // kMomentum only (torch default)
  bool nesterov = false;        // kMomentum only
  double beta1 = 0.9;           // Adam/AdamW first-moment decay (torch default)
  double beta2 = 0.999;         // Adam/AdamW second-moment decay (torch default)
  double lion_beta1 = 0.9;      // Lion's interpolation factor (the paper's default)
  double lion_beta2 = 0.99;     // Lion's moment decay (the paper's default)
  double epsilon = 1e-8;        // Adam/AdamW denominator guard (torch default)
  // L2 penalty added to the gradient for SGD/Momentum/Adam; decoupled decay for AdamW
  // (torch.optim.AdamW defaults to 1e-2; 0 here so no decay happens unless asked for).
  double weight_decay = 0.0;
};

// Whether this runtime implements `kind`'s update (every kind but Adafactor, which is planned
// only).
bool RunsOptimizer(OptimizerKind kind);

// How many state buffers the optimizer keeps for a parameter of `numel` elements: 0, 1, 2, 2,
// 4 (2 under 4096 elements) for the 8-bit AdamWs, 1 for Lion. REQUIRES: RunsOptimizer(kind).
int NumStateBuffers(OptimizerKind kind, int64_t numel);

struct OptimizerState {
  std::vector<Tensor> buffers;  // momentum buffer, Adam's (m, v), 8-bit (m, v, absmax_m, absmax_v)
  int64_t step = 0;             // updates applied so far
};

// Zeroed state for `parameter`, allocated from `allocator` under kOptimizerState.
OptimizerState CreateOptimizerState(const OptimizerOptions& options, const Tensor& parameter,
                                    Allocator& allocator);

// Updates `parameter` in place (its storage is shared with every handle) from `gradient`.
// Error when the shapes differ or the state does not belong to this optimizer.
Status ApplyOptimizerStep(const OptimizerOptions& options, const Tensor& gradient,
                          const Tensor& parameter, OptimizerState& state);

}  // namespace memplan
