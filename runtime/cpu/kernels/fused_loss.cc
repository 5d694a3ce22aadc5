// memplan:FusedLinearCrossEntropy (graph/ops/fused_loss_op.h) as Liger Kernel's
// fused_linear_cross_entropy_forward computes it: the whole loss and every gradient in forward,
// chunk by chunk of rows, so no [BT, V] logits tensor exists (one [chunk, V] tile of scratch).
//
// Forward, with n = the rows whose target is not -100 (Liger's total_n_non_ignore, counted over
// all BT rows before the first chunk) and chunk = fused_loss::ChunkRows(BT, H, V), per chunk:
//   z      = x_chunk @ W^T (+ bias)                 the logits tile, in the input's dtype
//   loss  += sum over kept rows of (logsumexp(z_r) - z_r[y_r])
//   g      = (softmax(z_r) - onehot(y_r)) / n        kept rows; 0 for ignored rows (in place of z)
//   grad_input[chunk rows] = g @ W                  [chunk, H]
//   grad_weight += g^T @ x_chunk                    [V, H] (x_chunk^T @ g for an [H, V] weight)
//   grad_bias   += sum over rows of g               [V]
// and the loss is the sum over n (every row ignored: 0/0 = NaN, as torch's mean cross entropy).
// These are the gradients of the mean loss; forward returns them as the extras the registry
// saves (grad_input, grad_weight, grad_bias). Backward only multiplies them by the upstream
// gradient (Liger's element_mul_kernel, which it skips at 1.0): the loss memplan's program
// appends is a sum over this scalar, so that gradient is loss_scale / accumulation steps.
//
// Precision: products and sums run in fp32 (softmax terms in double, as runtime/cpu/losses.cc);
// the logits tile and its gradient are rounded to the input's dtype (Liger's tile is the input's
// dtype and the cross-entropy kernel writes the gradient into it), grad_input to the input's
// dtype, and the running grad_weight / grad_bias to their own dtypes after each chunk
// (`grad_weight += ...` in the weight's dtype). Gradients agree with the unfused head and
// cross entropy (runtime/cpu/losses.cc) up to summation order, not bitwise.

#include <algorithm>
#include <cmath>
#include <string>
#include <utility>
#include <vector>

#include "graph/ops/fused_loss_op.h"
#include "runtime/cpu/kernel_registry.h"
#include "runtime/cpu/kernels/gemm_core.h"
#include "runtime/cpu/kernels/kernel_families.h"
#include "runtime/cpu/kernels/kernel_util.h"
#include "runtime/precision_emulation.h"

namespace memplan {
namespace {

constexpr const char* kOp = "FusedLinearCrossEntropy";

// torch's and Liger's default ignore_index: a row with this target adds nothing and is not
// counted in the mean.
constexpr int64_t kIgnoreIndex = -100;

// The inputs read as Liger reads them: x [BT, H], W [V, H] (transposed) or [H, V], target [BT],
// bias [V] or undefined.
struct Head {
  Tensor x, w, target, bias;
  bool transposed = false;
  int64_t rows = 0, hidden = 0, vocab = 0;
};

Expected<Head> ReadHead(const Attributes* attributes, const std::vector<Tensor>& inputs) {
  Head h;
  MEMPLAN_TRY(h.x, RequireTensor(inputs, 0, kOp, "input"));
  MEMPLAN_TRY(h.w, RequireTensor(inputs, 1, kOp, "weight"));
  MEMPLAN_TRY(h.target, RequireTensor(inputs, 2, kOp, "target"));
  h.bias = OptionalTensor(inputs, 3);
  h.transposed = AttributesOf(attributes).GetInt(fused_loss::kTransposedWeight, 0) != 0;
  if (h.x.rank() < 2 || h.w.rank() != 2)
    return MakeError(std::string(kOp) + ": input " + ShapeToString(h.x.shape()) + " and weight " +
                     ShapeToString(h.w.shape()) + " are not [..., H] and a 2-D weight");
  h.hidden = h.x.dim(h.x.rank() - 1);
  h.rows = h.hidden == 0 ? 0 : h.x.numel() / h.hidden;
  h.vocab = h.transposed ? h.w.dim(0) : h.w.dim(1);
  const int64_t weight_hidden = h.transposed ? h.w.dim(1) : h.w.dim(0);
  if (weight_hidden != h.hidden || h.target.numel() != h.rows ||
      (h.bias.defined() && h.bias.numel() != h.vocab)) {
    return MakeError(std::string(kOp) + ": input " + ShapeToString(h.x.shape()) + ", weight " +
                     ShapeToString(h.w.shape()) + (h.transposed ? " (transposed)" : "") +
                     ", target " + ShapeToString(h.target.shape()) +
                     (h.bias.defined() ? ", bias " + ShapeToString(h.bias.shape()) : "") +
                     " do not form a linear head over the input's rows");
  }
  return h;
}

// The loss's gradients with respect to the head's input, weight and bias, accumulated chunk by
// chunk.
struct HeadGradients {
  Tensor input, weight, bias;
};

// Turns a chunk's logits z[c, V] into their gradient in place (softmax - one-hot, over the
// counted rows), adding each counted row's loss to `loss` (one running sum over all chunks, in
// row order). An ignored row's gradient is 0.
void SoftmaxGradientRows(float* z, int64_t c, int64_t V, const int64_t* labels, double inv_n,
                         double& loss) {
  for (int64_t r = 0; r < c; ++r) {
    float* zr = z + r * V;
    const int64_t label = labels[r];
    if (label == kIgnoreIndex) {
      std::fill(zr, zr + V, 0.0f);
      continue;
    }
    double max = -INFINITY;
    for (int64_t v = 0; v < V; ++v) max = std::max<double>(max, zr[v]);
    double sum = 0.0;
    for (int64_t v = 0; v < V; ++v) sum += std::exp(zr[v] - max);
    const double lse = max + std::log(sum);
    loss += lse - zr[label];
    for (int64_t v = 0; v < V; ++v) {
      const double softmax = std::exp(zr[v] - lse);
      zr[v] = static_cast<float>((softmax - (v == label ? 1.0 : 0.0)) * inv_n);
    }
  }
}

// One chunk of rows [start, start + c): its logits tile z, their gradient, and that gradient
// carried back into the head's input, weight and bias gradients; its rows' losses added to `loss`.
void AccumulateChunk(const Head& h, const std::vector<int64_t>& labels, int64_t start, int64_t c,
                     double inv_n, std::vector<float>& z, HeadGradients& grads, double& loss) {
  const int64_t H = h.hidden, V = h.vocab;
  const float* x = h.x.data() + start * H;
  std::fill(z.begin(), z.begin() + c * V, 0.0f);
  // z[c, V] = x[c, H] @ W^T: W stored [V, H] (transposed) or [H, V].
  GemmAccumulate(/*trans_a=*/false, /*trans_b=*/h.transposed, c, V, H, 1.0f, x, h.w.data(),
                 z.data());
  if (h.bias.defined())
    for (int64_t r = 0; r < c; ++r)
      for (int64_t v = 0; v < V; ++v) z[static_cast<size_t>(r * V + v)] += h.bias.data()[v];
  RoundToDTypeInPlace(z.data(), c * V, h.x.dtype());
  SoftmaxGradientRows(z.data(), c, V, labels.data() + static_cast<size_t>(start), inv_n, loss);
  RoundToDTypeInPlace(z.data(), c * V, h.x.dtype());
  // grad_input[rows] = g[c, V] @ W[V, H]; an [H, V] weight is read transposed.
  float* gi = grads.input.mutable_data() + start * H;
  GemmAccumulate(false, /*trans_b=*/!h.transposed, c, H, V, 1.0f, z.data(), h.w.data(), gi);
  RoundToDTypeInPlace(gi, c * H, grads.input.dtype());
  // grad_weight += g^T @ x ([V, H]) or x^T @ g ([H, V]), in the weight's layout.
  if (h.transposed) {
    GemmAccumulate(/*trans_a=*/true, false, V, H, c, 1.0f, z.data(), x,
                   grads.weight.mutable_data());
  } else {
    GemmAccumulate(/*trans_a=*/true, false, H, V, c, 1.0f, x, z.data(),
                   grads.weight.mutable_data());
  }
  RoundToOwnDType(grads.weight);
  if (grads.bias.defined()) {
    float* gb = grads.bias.mutable_data();
    for (int64_t r = 0; r < c; ++r)
      for (int64_t v = 0; v < V; ++v) gb[v] += z[static_cast<size_t>(r * V + v)];
    RoundToOwnDType(grads.bias);
  }
}

Expected<ForwardResult> FusedLossForward(const KernelContext& ctx, const ForwardArgs& args) {
  MEMPLAN_TRY(Head h, ReadHead(args.attributes, args.inputs));
  const std::vector<int64_t> labels = h.target.ToInt64Vector();
  int64_t counted = 0;
  for (int64_t label : labels) {
    if (label == kIgnoreIndex) continue;
    if (label < 0 || label >= h.vocab)
      return MakeError(std::string(kOp) + ": label " + std::to_string(label) +
                       " is not a class in [0, " + std::to_string(h.vocab) + ")");
    ++counted;
  }
  HeadGradients grads;
  grads.input = NewExtra(ctx, h.x.shape(), h.x.dtype());
  grads.weight = NewExtra(ctx, h.w.shape(), h.w.dtype());
  if (h.bias.defined()) grads.bias = NewExtra(ctx, h.bias.shape(), h.bias.dtype());
  double loss = 0.0;
  if (h.rows > 0 && h.hidden > 0 && h.vocab > 0) {
    const int64_t chunk = fused_loss::ChunkRows(h.rows, h.hidden, h.vocab);
    const double inv_n = counted > 0 ? 1.0 / static_cast<double>(counted) : 0.0;
    std::vector<float> z(static_cast<size_t>(chunk * h.vocab));  // the logits tile, its gradient
    for (int64_t start = 0; start < h.rows; start += chunk)
      AccumulateChunk(h, labels, start, std::min(chunk, h.rows - start), inv_n, z, grads, loss);
  }
  // Every row ignored gives 0/0 = NaN, as torch's mean cross entropy (and Liger's) does.
  loss /= static_cast<double>(counted);
  Tensor out = NewOutput(ctx, {}, DType::kFloat32);
  out.mutable_data()[0] = static_cast<float>(loss);
  ForwardResult result;
  result.outputs.push_back(std::move(out));
  result.extras.emplace(fused_loss::kGradInput, std::move(grads.input));
  result.extras.emplace(fused_loss::kGradWeight, std::move(grads.weight));
  if (grads.bias.defined()) result.extras.emplace(fused_loss::kGradBias, std::move(grads.bias));
  return result;
}

// The saved gradients times the upstream gradient of the scalar loss.
Expected<InputGradients> FusedLossBackward(const KernelContext& ctx, const BackwardArgs& args) {
  MEMPLAN_TRY(Tensor dy, RequireTensor(args.grad_outputs, 0, kOp, "loss gradient"));
  if (dy.numel() != 1)
    return MakeError(std::string(kOp) + ": the loss gradient " + ShapeToString(dy.shape()) +
                     " is not a scalar");
  const float scale = dy.data()[0];
  MEMPLAN_TRY(InputGradients grads, MakeGradientSlots(args, 3, kOp));
  const std::pair<size_t, const char*> saved[] = {
      {0, fused_loss::kGradInput}, {1, fused_loss::kGradWeight}, {3, fused_loss::kGradBias}};
  for (const auto& [input, name] : saved) {
    if (!args.InputPresent(input) || !args.NeedsGrad(input)) continue;
    auto it = args.extras.find(name);
    if (it == args.extras.end())
      return MakeError(std::string(kOp) + ": backward needs the saved " + name);
    const Tensor& g = it->second;
    Tensor out = NewOverwrittenInputGradient(ctx, args, input);
    if (out.numel() != g.numel())
      return MakeError(std::string(kOp) + ": saved " + name + " " + ShapeToString(g.shape()) +
                       " does not match input " + std::to_string(input) + " " +
                       ShapeToString(out.shape()));
    for (int64_t e = 0; e < out.numel(); ++e) out.mutable_data()[e] = g.data()[e] * scale;
    PutRoundedGradient(grads, input, std::move(out));
  }
  return grads;
}

}  // namespace

void RegisterFusedLossKernels(KernelRegistry& registry) {
  registry.Register(fused_loss::kOpType, &FusedLossForward, &FusedLossBackward,
                    fused_loss::kDomain);
}

}  // namespace memplan
