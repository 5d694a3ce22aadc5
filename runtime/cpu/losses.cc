#include "runtime/cpu/losses.h"

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "runtime/cpu/kernels/kernel_util.h"
#include "runtime/precision_emulation.h"

namespace memplan {
namespace {

// PyTorch's default ignore_index: positions with this label add nothing and are not counted.
constexpr int64_t kIgnoreIndex = -100;

// Logits [N, C, d...] seen as positions (n, d...) each with C classes at stride `inner`.
struct ClassLayout {
  int64_t batch = 0, classes = 0, inner = 1;
  int64_t Positions() const { return batch * inner; }
  int64_t Base(int64_t position) const {
    return (position / inner) * classes * inner + position % inner;
  }
};

Expected<ClassLayout> CrossEntropyLayout(const Tensor& logits, const Tensor& target) {
  if (!target.defined()) return MakeError("cross_entropy: labels are missing");
  if (logits.rank() < 2) return MakeError("cross_entropy: logits must be [N, C, ...]");
  ClassLayout layout;
  layout.batch = logits.dim(0);
  layout.classes = logits.dim(1);
  for (int64_t d = 2; d < logits.rank(); ++d) layout.inner *= logits.dim(d);
  if (target.numel() != layout.Positions()) {
    return MakeError("cross_entropy: labels " + ShapeToString(target.shape()) +
                     " do not match logits " + ShapeToString(logits.shape()));
  }
  return layout;
}

// Per position: log-sum-exp of the logits, and the validated label (or kIgnoreIndex).
struct CrossEntropyTerms {
  std::vector<double> log_sum_exp;
  std::vector<int64_t> labels;
  int64_t counted = 0;
};

Expected<CrossEntropyTerms> ComputeTerms(const ClassLayout& layout, const Tensor& logits,
                                         const Tensor& target) {
  CrossEntropyTerms terms;
  terms.labels = target.ToInt64Vector();
  for (int64_t p = 0; p < layout.Positions(); ++p) {
    const int64_t label = terms.labels[static_cast<size_t>(p)];
    if (label != kIgnoreIndex && (label < 0 || label >= layout.classes)) {
      return MakeError("cross_entropy: label " + std::to_string(label) + " is not a class in [0, " +
                       std::to_string(layout.classes) + ")");
    }
    if (label != kIgnoreIndex) ++terms.counted;
    const float* z = logits.data() + layout.Base(p);
    double max = -INFINITY;
    for (int64_t c = 0; c < layout.classes; ++c) max = std::max<double>(max, z[c * layout.inner]);
    double sum = 0.0;
    for (int64_t c = 0; c < layout.classes; ++c) sum += std::exp(z[c * layout.inner] - max);
    terms.log_sum_exp.push_back(max + std::log(sum));
  }
  return terms;
}

Status CheckSameShape(const Tensor& prediction, const Tensor& target) {
  if (!target.defined() || target.shape() != prediction.shape()) {
    return MakeError("mse: target " +
                     (target.defined() ? ShapeToString(target.shape()) : "missing") +
                     " does not match prediction " + ShapeToString(prediction.shape()));
  }
  return OkStatus();
}

}  // namespace

Tensor CrossEntropyLogitsView(const Tensor& logits, int class_axis) {
  if (!logits.defined() || logits.rank() < 3) return logits;
  const int64_t axis =
      class_axis >= 0
          ? class_axis
          : static_cast<int64_t>(CrossEntropyClassAxis(static_cast<size_t>(logits.rank())));
  if (axis == 1 || axis >= logits.rank()) return logits;
  int64_t outer = 1, inner = 1;
  for (int64_t d = 0; d < axis; ++d) outer *= logits.dim(d);
  for (int64_t d = axis + 1; d < logits.rank(); ++d) inner *= logits.dim(d);
  const int64_t classes = logits.dim(axis);
  if (inner == 1) return logits.View({outer, classes});
  return logits.View({outer, classes, inner});
}

Status CrossEntropyLogProb(const Tensor& logits, Tensor& out) {
  if (logits.rank() < 2) return MakeError("cross_entropy: logits must be [N, C, ...]");
  if (out.numel() != logits.numel()) {
    return MakeError("cross_entropy: log_prob " + ShapeToString(out.shape()) +
                     " does not match logits " + ShapeToString(logits.shape()));
  }
  ClassLayout layout;
  layout.batch = logits.dim(0);
  layout.classes = logits.dim(1);
  for (int64_t d = 2; d < logits.rank(); ++d) layout.inner *= logits.dim(d);
  for (int64_t p = 0; p < layout.Positions(); ++p) {
    const float* z = logits.data() + layout.Base(p);
    float* o = out.mutable_data() + layout.Base(p);
    double max = -INFINITY;
    for (int64_t c = 0; c < layout.classes; ++c) max = std::max<double>(max, z[c * layout.inner]);
    double sum = 0.0;
    for (int64_t c = 0; c < layout.classes; ++c) sum += std::exp(z[c * layout.inner] - max);
    const double lse = max + std::log(sum);
    for (int64_t c = 0; c < layout.classes; ++c) {
      o[c * layout.inner] =
          RoundToDType(static_cast<float>(z[c * layout.inner] - lse), out.dtype());
    }
  }
  return OkStatus();
}

Expected<Tensor> LossForward(LossKind kind, const KernelContext& ctx, const Tensor& prediction,
                             const Tensor& target) {
  double loss = 0.0;
  switch (kind) {
    case LossKind::kCrossEntropy: {
      MEMPLAN_TRY(ClassLayout layout, CrossEntropyLayout(prediction, target));
      MEMPLAN_TRY(CrossEntropyTerms terms, ComputeTerms(layout, prediction, target));
      for (int64_t p = 0; p < layout.Positions(); ++p) {
        const int64_t label = terms.labels[static_cast<size_t>(p)];
        if (label == kIgnoreIndex) continue;
        loss += terms.log_sum_exp[static_cast<size_t>(p)] -
                prediction.data()[layout.Base(p) + label * layout.inner];
      }
      // Every position ignored gives 0/0 = NaN, as in PyTorch.
      loss /= static_cast<double>(terms.counted);
      break;
    }
    case LossKind::kMse: {
      MEMPLAN_RETURN_IF_ERROR(CheckSameShape(prediction, target));
      for (int64_t i = 0; i < prediction.numel(); ++i) {
        const double d = static_cast<double>(prediction.data()[i]) - target.data()[i];
        loss += d * d;
      }
      loss /= static_cast<double>(prediction.numel());
      break;
    }
    case LossKind::kSum:
      for (int64_t i = 0; i < prediction.numel(); ++i) loss += prediction.data()[i];
      break;
    case LossKind::kAuto:
      MEMPLAN_UNREACHABLE("the loss is resolved before the program runs");
      break;
  }
  Tensor result = NewOutput(ctx, {}, DType::kFloat32);
  result.mutable_data()[0] = static_cast<float>(loss);
  return result;
}

Expected<Tensor> LossBackward(LossKind kind, const KernelContext& ctx, const Tensor& prediction,
                              const Tensor& target, float grad_scale) {
  Tensor grad = NewOutput(ctx, prediction.shape(), FloatResultType(prediction.dtype()));
  float* g = grad.mutable_data();
  switch (kind) {
    case LossKind::kCrossEntropy: {
      // d/dz_c of mean_p(lse_p - z_p,label) = (softmax_c - [c == label]) / counted.
      MEMPLAN_TRY(ClassLayout layout, CrossEntropyLayout(prediction, target));
      MEMPLAN_TRY(CrossEntropyTerms terms, ComputeTerms(layout, prediction, target));
      const double scale = grad_scale / static_cast<double>(terms.counted);
      for (int64_t p = 0; p < layout.Positions(); ++p) {
        const int64_t label = terms.labels[static_cast<size_t>(p)];
        if (label == kIgnoreIndex) continue;
        const float* z = prediction.data() + layout.Base(p);
        float* out = g + layout.Base(p);
        const double lse = terms.log_sum_exp[static_cast<size_t>(p)];
        for (int64_t c = 0; c < layout.classes; ++c) {
          const double softmax = std::exp(z[c * layout.inner] - lse);
          out[c * layout.inner] = static_cast<float>(scale * (softmax - (c == label ? 1.0 : 0.0)));
        }
      }
      break;
    }
    case LossKind::kMse: {
      MEMPLAN_RETURN_IF_ERROR(CheckSameShape(prediction, target));
      const double scale = 2.0 * grad_scale / static_cast<double>(prediction.numel());
      for (int64_t i = 0; i < prediction.numel(); ++i) {
        g[i] = static_cast<float>(scale *
                                  (static_cast<double>(prediction.data()[i]) - target.data()[i]));
      }
      break;
    }
    case LossKind::kSum:
      for (int64_t i = 0; i < prediction.numel(); ++i) g[i] = grad_scale;
      break;
    case LossKind::kAuto:
      MEMPLAN_UNREACHABLE("the loss is resolved before the program runs");
      break;
  }
  RoundToOwnDType(grad);
  return grad;
}

}  // namespace memplan
