#pragma once
// The intermediates a torch.optim step allocates beyond the optimizer's state, per implementation
// (--optimizer-impl): the one place that knows them. Step emission turns each into a
// kOptimizerTransient buffer allocated at the kOptimizerStep step's Begin and freed at its End,
// so the simulator and the executor count the same bytes.
//
// What torch (>= 2.1, torch/optim/adam.py, adamw.py, sgd.py) allocates in optimizer.step():
//
//  * foreach Adam / AdamW (`_multi_tensor_adam`, the default on CUDA): per (device, dtype) group
//      exp_avg_sq_sqrt = torch._foreach_sqrt(device_exp_avg_sqs)
//    a copy of the second moment of every parameter of the group at once (state dtype), then
//    `_foreach_div_` / `_foreach_add_(exp_avg_sq_sqrt, eps)` / `_foreach_addcdiv_` work in place
//    (pytorch/pytorch#104780, July 2023, "Minimize use of intermediates", in torch 2.1; torch 2.0
//    also made `denom = torch._foreach_add(exp_avg_sq_sqrt, eps)`, a second copy, not modelled).
//    Adam's coupled weight decay first makes
//      device_grads = torch._foreach_add(device_grads, device_params, alpha=weight_decay)
//    a gradient-sized copy, but releases it before the sqrt:
//      # Delete the local intermediate since it won't be used anymore to save on peak memory
//      del device_grads
//    so the peak is the larger of the two lists, not their sum (the same bytes when gradients and
//    state share a dtype, as in every torch.optim regime). AdamW's decoupled decay is
//    `_foreach_mul_(device_params, 1 - lr * weight_decay)`, in place: nothing.
//  * for-loop Adam / AdamW (`_single_tensor_adam`, foreach=False), per parameter i in order:
//      denom = (exp_avg_sq.sqrt() / bias_correction2_sqrt).add_(eps)
//    `sqrt()` makes one copy and the division another while the first is still an operand, and
//    the previous parameter's `denom` is still bound to the local until the assignment: the peak
//    is max_i(s[i-1] + 2 s[i]) over the trainable parameters' state sizes s (s[-1] = 0). Adam's
//    coupled decay adds `grad = grad.add(param, alpha=weight_decay)`, held by the local through
//    the iteration: max_i(s[i-1] + 2 s[i] + g[i]).
//  * foreach SGD (`_multi_tensor_sgd`), with or without momentum (nesterov=False): `_foreach_mul_`
//    and `_foreach_add_` on the momentum buffers and the parameters, in place; the first step's
//    `torch.clone(grad)` is the momentum state itself. Coupled weight decay makes the group's
//    gradient copy (`device_grads = torch._foreach_add(...)`), held until the update.
//  * for-loop SGD: coupled weight decay makes one parameter's gradient copy at a time (the
//    previous one is released when `grad = grads[i]` rebinds the local): max_i g[i].
//  * fused (`_fused_adam_`, `_fused_sgd_`, DeepSpeed's FusedAdam, bitsandbytes' 8-bit kernels):
//    one kernel reads and writes in place: nothing. Adafactor and Lion: not modelled (nothing).
//
// Every parameter is one (device, dtype) group in a single-GPU or per-rank program; with several
// dtypes the foreach lists are counted all at once, an upper bound of torch's group-by-group loop.

#include <cstdint>
#include <string>
#include <vector>

#include "analyzer/vocabulary/optimizer_impl.h"
#include "analyzer/vocabulary/optimizer_kind.h"
#include "graph/dtype.h"

namespace memplan {

// One trainable parameter as the step sees it (a parameter with a gradient), in parameter order.
struct OptimizerStepParameter {
  int64_t elements = 0;
  DType gradient = DType::kFloat32;  // the gradient's dtype (what a weight-decay copy has)
  DType state = DType::kFloat32;     // the optimizer state's dtype (what sqrt(exp_avg_sq) has)
};

// One intermediate the step allocates at its start and frees at its end.
struct OptimizerTransient {
  // Index into the parameters it copies (foreach: one per parameter); -1 for a for-loop's
  // one-at-a-time peak, which no single parameter owns.
  int parameter = -1;
  std::string name;  // "exp_avg_sq_sqrt", "grad_with_decay", "for_loop_peak"
  DType dtype = DType::kFloat32;
  int64_t elements = 0;
  int64_t bytes() const;
};

// The intermediates of one optimizer step. `weight_decay`: torch's weight_decay != 0 (coupled for
// SGD and Adam, decoupled for AdamW). Empty for fused, for optimizers without torch.optim
// implementations (HasTorchOptimizerImpls) and for SGD without weight decay.
std::vector<OptimizerTransient> OptimizerStepTransients(
    OptimizerKind optimizer, OptimizerImpl impl, bool weight_decay,
    const std::vector<OptimizerStepParameter>& parameters);

}  // namespace memplan
