#pragma once
// What a mixed-precision regime (--amp-mode, analyzer/vocabulary/amp_mode.h) implies for the
// training program, stated once: the derivation passes (dtype propagation, step emission), the
// reports (model_state_bytes) and the CPU executor read these facts, never the mode itself.
//
//                      parameters   working copy   gradients   optimizer state   weight casts
//   fp32               fp32         -              fp32        fp32              -
//   autocast           fp32         -              fp32        fp32              per forward
//   (cached) master-weights     fp32 master  half (persist) half        fp32              - pure
//   (bf16)        bf16         -              bf16        bf16              -
//
// Autocast (torch.autocast + GradScaler): an fp16-safe op reading a parameter reads a half copy
// made by the first such op of the forward and kept in autocast's weight-cast cache until the
// autocast context exits (after the loss); backward's copy of a saved cast keeps it alive longer.
// The parameter gradient is computed in half by the op's backward and cast to fp32 (autograd's
// ToCopyBackward) before AccumulateGrad takes it.
//
// Autocast's cache holds only leaf tensors that require grad (the parameters): an activation is
// cast anew by every listed op that reads it (q, k and v projections of one fp32 hidden state
// make three half copies, each saved by its Linear). Ops autocast does not list run through
// TensorIterator's type promotion, which reads mixed dtypes in the kernel: a Mul of a bf16 and
// an fp32 tensor computes in fp32 without copying either and saves both as they are.

#include "analyzer/vocabulary/amp_mode.h"
#include "analyzer/vocabulary/precision.h"
#include "graph/dtype.h"

namespace memplan {

struct AmpRegime {
  Precision precision = Precision::kFp32;
  AmpMode mode = AmpMode::kMasterWeights;
  // The dtype fp16-safe ops compute in; kUndefined in fp32 (nothing is placed).
  DType working = DType::kUndefined;
  // The dtype of the tensors the optimizer updates (the parameters, or the masters): kUndefined
  // = the graph's dtype (fp32 plans keep whatever the model says).
  DType parameter = DType::kUndefined;
  // A persistent copy of every parameter in the working dtype beside it (master-weights only).
  DType working_copy = DType::kUndefined;
  // Parameter gradients (kUndefined = the parameter's graph dtype).
  DType gradient = DType::kUndefined;
  // Optimizer state buffers (Adam's m and v, momentum).
  DType optimizer_state = DType::kFloat32;
  // Autocast's per-forward weight casts (see above).
  bool casts_weights_per_forward = false;
  // Every op casts the activations it reads for itself: no cast of an activation is shared
  // between two readers (autocast's cache skips non-leaf tensors; see above).
  bool casts_activations_per_op = false;
  // Ops that follow their inputs' dtype read mixed-dtype activations as stored (type promotion
  // inside the kernel) instead of reading a cast copy of the narrower ones.
  bool promotes_in_kernel = false;
  // Whether op categories decide each node's dtype (autocast's policy). Pure runs every op in
  // its inputs' dtype, i.e. the working dtype throughout (no autocast context).
  bool placed_by_op_category = false;
  // The dtype the forward sees a parameter in when its op casts nothing: what a follows-inputs op
  // reading only parameters (an embedding's Gather) computes in.
  DType forward_parameter = DType::kUndefined;

  bool mixed() const { return working != DType::kUndefined; }
  // Where master_weights bytes come from: the fp32 parameters of master-weights mode.
  bool keeps_master_copy() const { return working_copy != DType::kUndefined; }
};

AmpRegime RegimeOf(Precision precision, AmpMode mode);

}  // namespace memplan
