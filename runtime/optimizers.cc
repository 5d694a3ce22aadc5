#include "runtime/optimizers.h"

#include <cmath>
#include <string>

#include "runtime/precision_emulation.h"

namespace memplan {

bool RunsOptimizer(OptimizerKind kind) { return kind != OptimizerKind::kAdafactor; }

int NumStateBuffers(OptimizerKind kind) {
  switch (kind) {
    case OptimizerKind::kSgd:
      return 0;
    case OptimizerKind::kMomentum:
      return 1;
    case OptimizerKind::kAdam:
    case OptimizerKind::kAdamW:
      return 2;
    case OptimizerKind::kAdafactor:
      break;
  }
  MEMPLAN_CHECK(false && "the runtime does not implement this optimizer");
  return 0;
}

OptimizerState CreateOptimizerState(const OptimizerOptions& options, const Tensor& parameter,
                                    Allocator& allocator) {
  OptimizerState state;
  for (int i = 0; i < NumStateBuffers(options.kind); ++i) {
    state.buffers.push_back(Tensor::Zeros(parameter.shape(), DType::kFloat32, allocator,
                                          MemoryCategory::kOptimizerState));
  }
  return state;
}

Status ApplyOptimizerStep(const OptimizerOptions& options, const Tensor& gradient,
                          const Tensor& parameter, OptimizerState& state) {
  if (!gradient.defined() || !parameter.defined() || gradient.numel() != parameter.numel()) {
    return MakeError("optimizer: gradient " +
                     (gradient.defined() ? ShapeToString(gradient.shape()) : "missing") +
                     " does not match parameter " +
                     (parameter.defined() ? ShapeToString(parameter.shape()) : "missing"));
  }
  if (static_cast<int>(state.buffers.size()) != NumStateBuffers(options.kind)) {
    return MakeError("optimizer: state has " + std::to_string(state.buffers.size()) +
                     " buffers, this optimizer needs " +
                     std::to_string(NumStateBuffers(options.kind)));
  }
  ++state.step;
  const int64_t n = parameter.numel();
  float* p = parameter.mutable_data();
  const float* g = gradient.data();
  // Hyper-parameters in float, as torch's fp32 parameters see them.
  const auto lr = static_cast<float>(options.learning_rate);
  const auto wd = static_cast<float>(options.weight_decay);
  switch (options.kind) {
    case OptimizerKind::kSgd:
      for (int64_t i = 0; i < n; ++i) p[i] -= lr * (g[i] + wd * p[i]);
      break;
    case OptimizerKind::kMomentum: {
      float* b = state.buffers[0].mutable_data();
      const auto mu = static_cast<float>(options.momentum);
      const auto keep = static_cast<float>(1.0 - options.dampening);  // as torch, via double
      for (int64_t i = 0; i < n; ++i) {
        const float d = g[i] + wd * p[i];
        b[i] = state.step == 1 ? d : mu * b[i] + keep * d;
        p[i] -= lr * (options.nesterov ? d + mu * b[i] : b[i]);
      }
      break;
    }
    case OptimizerKind::kAdam:
    case OptimizerKind::kAdamW: {
      const bool decoupled = options.kind == OptimizerKind::kAdamW;
      float* m = state.buffers[0].mutable_data();
      float* v = state.buffers[1].mutable_data();
      const auto b1 = static_cast<float>(options.beta1);
      const auto b2 = static_cast<float>(options.beta2);
      // torch passes 1 - beta and 1 - lr wd as Python floats (double) into fp32 ops.
      const auto one_minus_b1 = static_cast<float>(1.0 - options.beta1);
      const auto one_minus_b2 = static_cast<float>(1.0 - options.beta2);
      const auto decay = static_cast<float>(1.0 - options.learning_rate * options.weight_decay);
      const auto t = static_cast<double>(state.step);
      // Bias corrections as torch computes them (Python floats, i.e. double).
      const double correction1 = 1.0 - std::pow(options.beta1, t);
      const double correction2_sqrt = std::sqrt(1.0 - std::pow(options.beta2, t));
      const auto step_size = static_cast<float>(options.learning_rate / correction1);
      const auto eps = static_cast<float>(options.epsilon);
      for (int64_t i = 0; i < n; ++i) {
        float d = g[i];
        if (decoupled) {
          p[i] *= decay;
        } else {
          d += wd * p[i];
        }
        m[i] = b1 * m[i] + one_minus_b1 * d;
        v[i] = b2 * v[i] + one_minus_b2 * d * d;
        const float denom = std::sqrt(v[i]) / static_cast<float>(correction2_sqrt) + eps;
        p[i] -= step_size * m[i] / denom;
      }
      break;
    }
    case OptimizerKind::kAdafactor:
      MEMPLAN_CHECK(false && "the runtime does not implement this optimizer");
      break;
  }
  RoundToDTypeInPlace(p, n, parameter.dtype());
  return OkStatus();
}

}  // namespace memplan
