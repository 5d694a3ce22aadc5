#pragma once
// Finite-difference gradient checking shared by every backward-kernel test.
//
// For an op f with inputs x and a fixed random cotangent r over its outputs, the scalar
// L(x) = sum_j r_j f(x)_j (accumulated in double) has dL/dx = backward(r). Each checked input
// element is perturbed by +-kStep and the central difference (L+ - L-) / (h+ + h-) is compared
// with the backward kernel's gradient, where h+/h- are the steps actually taken after rounding
// x +- kStep to float (so the quotient is exact in double up to the loss's own rounding).
//
// Error bound: |analytic - numeric| <= kAbsTolerance + kRelTolerance * |numeric|. With float
// kernels and kStep = 1e-2 the truncation error is ~kStep^2 |f'''| / 6 ~ 2e-5 and the rounding
// error ~ 6e-8 * sum|r f| / (2 kStep) ~ 3e-6 per output element (at most ~3e-4 for the ~100
// outputs used here), so a 2e-3 + 1e-2 relative band only passes correct gradients: a wrong
// formula is off by O(1) relative.

#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "runtime/cpu/kernel_registry.h"
#include "runtime/tensor.h"

namespace memplan::testing {

inline constexpr double kStep = 1e-2;
inline constexpr double kAbsTolerance = 2e-3;
inline constexpr double kRelTolerance = 1e-2;

// Uniform values in [lo, hi) from a fixed seed.
inline Tensor RandomTensor(TensorShape shape, uint32_t seed, float lo = -1.0f, float hi = 1.0f) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> dist(lo, hi);
  std::vector<float> values(static_cast<size_t>(NumElements(shape)));
  for (float& v : values) v = dist(rng);
  return Tensor::FromValues(std::move(shape), values);
}

// Values whose magnitude stays in [lo, hi) with a random sign: keeps inputs away from kinks
// (Relu at 0) and poles (Log, Reciprocal, Div at 0).
inline Tensor RandomAwayFromZero(TensorShape shape, uint32_t seed, float lo, float hi) {
  Tensor t = RandomTensor(std::move(shape), seed, lo, hi);
  std::mt19937 rng(seed + 1);
  for (int64_t i = 0; i < t.numel(); ++i) {
    if (rng() % 2 == 0) t.mutable_data()[i] = -t.data()[i];
  }
  return t;
}

// Distinct values spaced far more than 2 kStep apart, in random order: max-pooling picks the
// same element under every perturbation.
inline Tensor DistinctTensor(TensorShape shape, uint32_t seed) {
  const int64_t n = NumElements(shape);
  std::vector<float> values(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i)
    values[static_cast<size_t>(i)] = 0.1f * static_cast<float>(i) - 0.05f * static_cast<float>(n);
  std::mt19937 rng(seed);
  std::shuffle(values.begin(), values.end(), rng);
  return Tensor::FromValues(std::move(shape), values);
}

inline Tensor IntTensor(TensorShape shape, const std::vector<float>& values) {
  return Tensor::FromValues(std::move(shape), values, DType::kInt64);
}

struct GradCheckCase {
  std::string op;
  std::string domain;  // "" = ai.onnx; memplan's fused ops name theirs
  Attributes attributes;
  std::vector<Tensor> inputs;
  std::vector<size_t> checked_inputs;  // inputs whose gradient is checked
  int num_outputs = 1;
  std::vector<size_t> differentiable_outputs = {0};  // outputs that get a random cotangent
  bool training = true;
  // Replaces the registered backward kernel (used to show the check rejects a wrong gradient).
  BackwardKernel backward_override = nullptr;
};

struct GradCheckReport {
  double worst_ratio = 0.0;  // max over elements of error / allowed error (must be <= 1)
  std::string worst;         // where the worst element is, for the failure message
  int64_t elements_checked = 0;
};

namespace detail {

inline KernelContext CheckContext(bool training) {
  KernelContext ctx;
  ctx.training = training;
  ctx.seed = 1234;  // fixed: Dropout draws the same mask in every forward
  return ctx;
}

inline ForwardResult RunCaseForward(const GradCheckCase& c) {
  ForwardArgs args;
  args.attributes = &c.attributes;
  args.inputs = c.inputs;
  args.num_outputs = c.num_outputs;
  auto result = RunForward(c.op, CheckContext(c.training), args, c.domain);
  if (!result.ok()) FAIL(c.op << " forward failed: " << result.error().message);
  return std::move(result).value();
}

inline double Objective(const ForwardResult& forward, const GradCheckCase& c,
                        const std::vector<Tensor>& cotangents) {
  double sum = 0.0;
  for (size_t k = 0; k < c.differentiable_outputs.size(); ++k) {
    const Tensor& y = forward.outputs.at(c.differentiable_outputs[k]);
    for (int64_t i = 0; i < y.numel(); ++i) {
      sum += static_cast<double>(y.data()[i]) * cotangents[k].data()[i];
    }
  }
  return sum;
}

}  // namespace detail

// Runs forward and backward once and compares every checked input element with the central
// difference. Backward gets every forward input, output and extra.
inline GradCheckReport CheckGradients(GradCheckCase c) {
  const ForwardResult base = detail::RunCaseForward(c);
  std::vector<Tensor> cotangents;
  BackwardArgs args;
  args.attributes = &c.attributes;
  args.inputs = c.inputs;
  args.outputs = base.outputs;
  args.extras = base.extras;
  for (const Tensor& t : c.inputs) {
    args.input_shapes.push_back(t.defined() ? t.shape() : TensorShape{});
    args.input_dtypes.push_back(t.defined() ? t.dtype() : DType::kUndefined);
  }
  args.grad_outputs.resize(base.outputs.size());
  for (size_t k = 0; k < c.differentiable_outputs.size(); ++k) {
    const size_t out = c.differentiable_outputs[k];
    cotangents.push_back(
        RandomTensor(base.outputs.at(out).shape(), 777 + static_cast<uint32_t>(k)));
    args.grad_outputs[out] = cotangents.back();
  }
  args.needs_input_grad.assign(c.inputs.size(), false);
  for (size_t i : c.checked_inputs) args.needs_input_grad[i] = true;
  auto grads = c.backward_override != nullptr
                   ? c.backward_override(detail::CheckContext(c.training), args)
                   : RunBackward(c.op, detail::CheckContext(c.training), args, c.domain);
  if (!grads.ok()) FAIL(c.op << " backward failed: " << grads.error().message);

  GradCheckReport report;
  for (size_t i : c.checked_inputs) {
    const Tensor& analytic = grads->at(i);
    REQUIRE(analytic.defined());
    REQUIRE(analytic.shape() == c.inputs[i].shape());
    // Perturb a private copy so views shared with other inputs are not disturbed.
    c.inputs[i] = c.inputs[i].Clone(PlainCpuAllocator(), MemoryCategory::kOther);
    float* x = c.inputs[i].mutable_data();
    for (int64_t e = 0; e < c.inputs[i].numel(); ++e) {
      const float original = x[e];
      x[e] = static_cast<float>(original + kStep);
      const double h_plus = static_cast<double>(x[e]) - original;
      const double plus = detail::Objective(detail::RunCaseForward(c), c, cotangents);
      x[e] = static_cast<float>(original - kStep);
      const double h_minus = original - static_cast<double>(x[e]);
      const double minus = detail::Objective(detail::RunCaseForward(c), c, cotangents);
      x[e] = original;
      const double numeric = (plus - minus) / (h_plus + h_minus);
      const double error = std::abs(analytic.data()[e] - numeric);
      const double ratio = error / (kAbsTolerance + kRelTolerance * std::abs(numeric));
      ++report.elements_checked;
      if (ratio > report.worst_ratio) {
        report.worst_ratio = ratio;
        std::ostringstream where;
        where << c.op << " input " << i << " element " << e << ": analytic " << analytic.data()[e]
              << " numeric " << numeric;
        report.worst = where.str();
      }
    }
  }
  return report;
}

// The assertion every gradcheck test ends with.
#define MEMPLAN_REQUIRE_GRADIENTS_MATCH(case_expr)                              \
  do {                                                                          \
    const auto memplan_report_ = ::memplan::testing::CheckGradients(case_expr); \
    INFO(memplan_report_.worst);                                                \
    REQUIRE(memplan_report_.elements_checked > 0);                              \
    REQUIRE(memplan_report_.worst_ratio <= 1.0);                                \
  } while (false)

}  // namespace memplan::testing
