#include "analyzer/program/optimizer_transient.h"

#include <algorithm>

namespace memplan {

int64_t OptimizerTransient::bytes() const { return elements * ByteSize(dtype); }

namespace {

bool IsAdam(OptimizerKind optimizer) {
  return optimizer == OptimizerKind::kAdam || optimizer == OptimizerKind::kAdamW;
}

// Whether the weight decay copies the gradient (SGD's and Adam's `grad + wd * param`); AdamW's
// decoupled decay scales the parameters in place.
bool CopiesGradient(OptimizerKind optimizer, bool weight_decay) {
  return weight_decay && optimizer != OptimizerKind::kAdamW;
}

int64_t Sum(const std::vector<OptimizerTransient>& list) {
  int64_t total = 0;
  for (const OptimizerTransient& t : list) total += t.bytes();
  return total;
}

std::vector<OptimizerTransient> PerParameter(const std::vector<OptimizerStepParameter>& parameters,
                                             const std::string& name, bool state_dtype) {
  std::vector<OptimizerTransient> list;
  for (size_t i = 0; i < parameters.size(); ++i) {
    const OptimizerStepParameter& p = parameters[i];
    list.push_back({static_cast<int>(i), name, state_dtype ? p.state : p.gradient, p.elements});
  }
  return list;
}

std::vector<OptimizerTransient> Foreach(OptimizerKind optimizer, bool weight_decay,
                                        const std::vector<OptimizerStepParameter>& parameters) {
  const bool copy = CopiesGradient(optimizer, weight_decay);
  if (!IsAdam(optimizer)) {
    // SGD: the group's gradient copy lives until `_foreach_add_(device_params, device_grads)`.
    if (!copy) return {};
    return PerParameter(parameters, "grad_with_decay", /*state_dtype=*/false);
  }
  // Adam: `del device_grads` releases the decay's copy before `_foreach_sqrt`, so whichever list
  // is larger is the peak (the sqrt, unless the gradients are wider than the state).
  std::vector<OptimizerTransient> roots =
      PerParameter(parameters, "exp_avg_sq_sqrt", /*state_dtype=*/true);
  if (copy) {
    std::vector<OptimizerTransient> grads =
        PerParameter(parameters, "grad_with_decay", /*state_dtype=*/false);
    if (Sum(grads) > Sum(roots)) return grads;
  }
  return roots;
}

std::vector<OptimizerTransient> ForLoop(OptimizerKind optimizer, bool weight_decay,
                                        const std::vector<OptimizerStepParameter>& parameters) {
  const bool copy = CopiesGradient(optimizer, weight_decay);
  if (!IsAdam(optimizer) && !copy) return {};
  // The buffer is in the state dtype when every byte counted is (the usual case), else in bytes.
  DType dtype = parameters.front().state;
  for (const OptimizerStepParameter& p : parameters)
    if (p.state != dtype || (copy && p.gradient != dtype)) dtype = DType::kUInt8;
  const int64_t unit = ByteSize(dtype);
  int64_t peak = 0;
  int64_t previous_denom = 0;  // the last parameter's `denom`, still bound during the next one's
  for (const OptimizerStepParameter& p : parameters) {
    const int64_t state = p.elements * ByteSize(p.state);
    const int64_t grad_copy = copy ? p.elements * ByteSize(p.gradient) : 0;
    if (IsAdam(optimizer)) {
      // sqrt() and the division's result coexist; the previous denom is released only when the
      // new one is assigned.
      peak = std::max(peak, previous_denom + 2 * state + grad_copy);
      previous_denom = state;
    } else {
      peak = std::max(peak, grad_copy);
    }
  }
  return {{-1, "for_loop_peak", dtype, peak / unit}};
}

}  // namespace

std::vector<OptimizerTransient> OptimizerStepTransients(
    OptimizerKind optimizer, OptimizerImpl impl, bool weight_decay,
    const std::vector<OptimizerStepParameter>& parameters) {
  if (parameters.empty() || !HasTorchOptimizerImpls(optimizer)) return {};
  switch (impl) {
    case OptimizerImpl::kFused:
      return {};
    case OptimizerImpl::kForeach:
      return Foreach(optimizer, weight_decay, parameters);
    case OptimizerImpl::kForLoop:
      return ForLoop(optimizer, weight_decay, parameters);
  }
  return {};
}

}  // namespace memplan
