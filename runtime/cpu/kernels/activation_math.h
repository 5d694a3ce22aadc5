#pragma once
// The pointwise math of the activations that more than one CPU kernel computes: the unary
// activations (unary.cc: Sigmoid, Swish, Gelu) and Liger's gated MLP products (gated_mlp.cc:
// silu(a) * b, gelu_tanh(a) * b). Each derivative is the one derivatives.yaml's backward uses
// (silu_backward, gelu_backward with approximate "none" or "tanh").

#include <cmath>
#include <numbers>

namespace memplan::activation_math {

inline constexpr float kInvSqrt2 = static_cast<float>(1.0 / std::numbers::sqrt2);
inline constexpr float kSqrt2OverPi =
    static_cast<float>(std::numbers::sqrt2 * std::numbers::inv_sqrtpi);
inline constexpr float kTwoOverSqrtPi = static_cast<float>(2.0 * std::numbers::inv_sqrtpi);
inline constexpr float kTanhCoefficient = 0.044715f;

// Written so that exp never overflows.
inline float Sigmoid(float x) {
  if (x >= 0.0f) return 1.0f / (1.0f + std::exp(-x));
  const float e = std::exp(x);
  return e / (1.0f + e);
}

// Swish: x * sigmoid(alpha * x), SiLU when alpha = 1.
inline float Swish(float alpha, float x) { return x * Sigmoid(alpha * x); }
// d/dx [x s(a x)] = s + a x s (1 - s).
inline float SwishDerivative(float alpha, float x) {
  const float s = Sigmoid(alpha * x);
  return s + alpha * x * s * (1.0f - s);
}

// Gelu: 0.5 x (1 + erf(x / sqrt 2)), or with the tanh approximation
// 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3))).
inline float Gelu(bool tanh_approximation, float v) {
  return tanh_approximation
             ? 0.5f * v * (1.0f + std::tanh(kSqrt2OverPi * (v + kTanhCoefficient * v * v * v)))
             : 0.5f * v * (1.0f + std::erf(v * kInvSqrt2));
}
inline float GeluDerivative(bool tanh_approximation, float v) {
  if (tanh_approximation) {
    const float inner = kSqrt2OverPi * (v + kTanhCoefficient * v * v * v);
    const float t = std::tanh(inner);
    const float d_inner = kSqrt2OverPi * (1.0f + 3.0f * kTanhCoefficient * v * v);
    return 0.5f * (1.0f + t) + 0.5f * v * (1.0f - t * t) * d_inner;
  }
  // d/dx [x Phi(x)] = Phi(x) + x phi(x), phi the standard normal density.
  const float cdf = 0.5f * (1.0f + std::erf(v * kInvSqrt2));
  const float pdf = 0.5f * kTwoOverSqrtPi * kInvSqrt2 * std::exp(-0.5f * v * v);
  return cdf + v * pdf;
}

}  // namespace memplan::activation_math
