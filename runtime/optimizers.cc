#include "runtime/optimizers.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <optional>
#include <string>

#include "analyzer/program/optimizer_state.h"
#include "runtime/dynamic_quantization.h"
#include "runtime/precision_emulation.h"

namespace memplan {

bool RunsOptimizer(OptimizerKind kind) { return kind != OptimizerKind::kAdafactor; }

namespace {

TensorShape ConcreteShape(const Shape& shape) {
  TensorShape out;
  for (const Dim& d : shape.dims) {
    std::optional<int64_t> n = d.constant_value();
    MEMPLAN_CHECK(n.has_value()) << "optimizer state shapes are constant";
    out.push_back(*n);
  }
  return out;
}

Shape SymbolicShape(const TensorShape& shape) {
  Shape out;
  for (int64_t n : shape) out.dims.push_back(Dim(n));
  return out;
}

// An 8-bit code (stored as its index in the tensor's floats) read back with its block's absmax.
float Dequantize(const std::array<float, 256>& map, float code, float absmax) {
  return map[static_cast<size_t>(code)] * absmax;
}

}  // namespace

int NumStateBuffers(OptimizerKind kind, int64_t numel) {
  MEMPLAN_CHECK(RunsOptimizer(kind)) << "the runtime does not implement this optimizer";
  return static_cast<int>(OptimizerStates(kind, Shape{{Dim(numel)}}).size());
}

OptimizerState CreateOptimizerState(const OptimizerOptions& options, const Tensor& parameter,
                                    Allocator& allocator) {
  OptimizerState state;
  for (const OptimizerStateSpec& spec :
       OptimizerStates(options.kind, SymbolicShape(parameter.shape()))) {
    state.buffers.push_back(Tensor::Zeros(ConcreteShape(spec.shape), spec.dtype, allocator,
                                          MemoryCategory::kOptimizerState));
  }
  return state;
}

namespace {

// The per-step scalars of torch's Adam update at step `step` (counted from 1). The betas, their
// complements and the decoupled decay in float, as torch's fp32 parameters see them (torch passes
// 1 - beta and 1 - lr wd as Python floats, i.e. double, into fp32 ops); the bias corrections in
// double, as torch computes them.
struct AdamScalars {
  float b1, b2, one_minus_b1, one_minus_b2, decay;
  double correction2_sqrt;
  float step_size, eps;

  // What the update subtracts from a parameter with moments m and v:
  // step_size * m / (sqrt(v) / sqrt(1 - beta2^t) + eps).
  float Update(float m, float v) const {
    const float denom = std::sqrt(v) / static_cast<float>(correction2_sqrt) + eps;
    return step_size * m / denom;
  }
};

AdamScalars AdamScalarsAt(const OptimizerOptions& options, int64_t step) {
  AdamScalars s;
  s.b1 = static_cast<float>(options.beta1);
  s.b2 = static_cast<float>(options.beta2);
  s.one_minus_b1 = static_cast<float>(1.0 - options.beta1);
  s.one_minus_b2 = static_cast<float>(1.0 - options.beta2);
  s.decay = static_cast<float>(1.0 - options.learning_rate * options.weight_decay);
  const auto t = static_cast<double>(step);
  const double correction1 = 1.0 - std::pow(options.beta1, t);
  s.correction2_sqrt = std::sqrt(1.0 - std::pow(options.beta2, t));
  s.step_size = static_cast<float>(options.learning_rate / correction1);
  s.eps = static_cast<float>(options.epsilon);
  return s;
}

// AdamW8bit / PagedAdamW8bit on 8-bit state (bitsandbytes' kOptimizerStatic8bit2StateBlockwise):
// per 2048-element block, dequantise both moments, apply the AdamW update with the fp32 values,
// requantise to the nearest dynamic code with the block's new absmax.
void EightBitAdamW(const OptimizerOptions& options, int64_t step, const float* g, float* p,
                   int64_t n, std::vector<Tensor>& buffers) {
  float* m_code = buffers[0].mutable_data();
  float* v_code = buffers[1].mutable_data();
  float* m_absmax = buffers[2].mutable_data();
  float* v_absmax = buffers[3].mutable_data();
  const AdamScalars s = AdamScalarsAt(options, step);
  const std::array<float, 256>& signed_map = DynamicQuantizationMap(/*is_signed=*/true);
  const std::array<float, 256>& unsigned_map = DynamicQuantizationMap(/*is_signed=*/false);
  std::vector<float> m(static_cast<size_t>(kEightBitStateBlock));
  std::vector<float> v(static_cast<size_t>(kEightBitStateBlock));
  for (int64_t begin = 0, block = 0; begin < n; begin += kEightBitStateBlock, ++block) {
    const int64_t end = std::min(n, begin + kEightBitStateBlock);
    float new_m_absmax = 0.0f;
    float new_v_absmax = 0.0f;
    for (int64_t i = begin; i < end; ++i) {
      const size_t k = static_cast<size_t>(i - begin);
      m[k] = s.b1 * Dequantize(signed_map, m_code[i], m_absmax[block]) + s.one_minus_b1 * g[i];
      v[k] = s.b2 * Dequantize(unsigned_map, v_code[i], v_absmax[block]) +
             s.one_minus_b2 * g[i] * g[i];
      p[i] *= s.decay;
      p[i] -= s.Update(m[k], v[k]);
      new_m_absmax = std::max(new_m_absmax, std::fabs(m[k]));
      new_v_absmax = std::max(new_v_absmax, v[k]);
    }
    m_absmax[block] = new_m_absmax;
    v_absmax[block] = new_v_absmax;
    for (int64_t i = begin; i < end; ++i) {
      const size_t k = static_cast<size_t>(i - begin);
      m_code[i] = NearestCode(signed_map, new_m_absmax > 0 ? m[k] / new_m_absmax : 0.0f);
      v_code[i] = NearestCode(unsigned_map, new_v_absmax > 0 ? v[k] / new_v_absmax : 0.0f);
    }
  }
}

// AdamW with fp32 moments (torch.optim.AdamW, weight decay decoupled or folded as L2).
void FullPrecisionAdam(const OptimizerOptions& options, bool decoupled, int64_t step,
                       const float* g, float* p, int64_t n, float* m, float* v) {
  const auto wd = static_cast<float>(options.weight_decay);
  const AdamScalars s = AdamScalarsAt(options, step);
  for (int64_t i = 0; i < n; ++i) {
    float d = g[i];
    if (decoupled) {
      p[i] *= s.decay;
    } else {
      d += wd * p[i];
    }
    m[i] = s.b1 * m[i] + s.one_minus_b1 * d;
    v[i] = s.b2 * v[i] + s.one_minus_b2 * d * d;
    p[i] -= s.Update(m[i], v[i]);
  }
}

}  // namespace

Status ApplyOptimizerStep(const OptimizerOptions& options, const Tensor& gradient,
                          const Tensor& parameter, OptimizerState& state) {
  if (!gradient.defined() || !parameter.defined() || gradient.numel() != parameter.numel()) {
    return MakeError("optimizer: gradient " +
                     (gradient.defined() ? ShapeToString(gradient.shape()) : "missing") +
                     " does not match parameter " +
                     (parameter.defined() ? ShapeToString(parameter.shape()) : "missing"));
  }
  const int needed = NumStateBuffers(options.kind, parameter.numel());
  if (static_cast<int>(state.buffers.size()) != needed) {
    return MakeError("optimizer: state has " + std::to_string(state.buffers.size()) +
                     " buffers, this optimizer needs " + std::to_string(needed));
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
    case OptimizerKind::kAdamW:
      FullPrecisionAdam(options, options.kind == OptimizerKind::kAdamW, state.step, g, p, n,
                        state.buffers[0].mutable_data(), state.buffers[1].mutable_data());
      break;
    case OptimizerKind::kAdamW8bit:
    case OptimizerKind::kPagedAdamW8bit:
      if (state.buffers.size() == 4) {
        EightBitAdamW(options, state.step, g, p, n, state.buffers);
      } else {  // a small tensor keeps 32-bit state
        FullPrecisionAdam(options, /*decoupled=*/true, state.step, g, p, n,
                          state.buffers[0].mutable_data(), state.buffers[1].mutable_data());
      }
      break;
    case OptimizerKind::kLion: {
      float* m = state.buffers[0].mutable_data();
      const auto b1 = static_cast<float>(options.lion_beta1);
      const auto b2 = static_cast<float>(options.lion_beta2);
      const auto decay = static_cast<float>(1.0 - options.learning_rate * options.weight_decay);
      for (int64_t i = 0; i < n; ++i) {
        const float c = b1 * m[i] + (1.0f - b1) * g[i];
        p[i] *= decay;
        p[i] -= lr * static_cast<float>((c > 0.0f) - (c < 0.0f));
        m[i] = b2 * m[i] + (1.0f - b2) * g[i];
      }
      break;
    }
    case OptimizerKind::kAdafactor:
      MEMPLAN_UNREACHABLE("the runtime does not implement this optimizer");
      break;
  }
  RoundToDTypeInPlace(p, n, parameter.dtype());
  // Pure bf16 keeps its optimizer state in bf16 (torch.optim makes it like the parameter).
  for (Tensor& b : state.buffers) RoundToDTypeInPlace(b.mutable_data(), b.numel(), b.dtype());
  return OkStatus();
}

}  // namespace memplan
