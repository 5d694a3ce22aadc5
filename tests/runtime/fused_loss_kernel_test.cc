// The CPU reference kernel of memplan:FusedLinearCrossEntropy (runtime/cpu/kernels/fused_loss.cc):
// forward's loss and saved gradients on a case small enough to compute by hand, the same head with
// an [H, V] weight, backward's scaling, ignored rows and bad labels, and a larger case against
// PyTorch's unfused head + cross entropy (kernel_references.h, make_kernel_references.py).

#include <catch2/catch.hpp>

#include <cmath>
#include <string>
#include <vector>

#include "graph/ops/fused_loss_op.h"
#include "runtime/cpu/kernel_registry.h"
#include "tests/runtime/kernel_references.h"

namespace memplan::testing {
namespace {

Tensor T(const std::vector<int64_t>& shape, const std::vector<float>& values) {
  return Tensor::FromValues(shape, values);
}

Expected<ForwardResult> Forward(const std::vector<Tensor>& inputs, bool transposed) {
  Attributes attrs;
  attrs.Set(fused_loss::kTransposedWeight, int64_t{transposed ? 1 : 0});
  ForwardArgs args;
  args.attributes = &attrs;
  args.inputs = inputs;
  return RunForward(fused_loss::kOpType, KernelContext{}, args, fused_loss::kDomain);
}

// Backward with the saved gradients of `forward` and the upstream gradient `dy`.
InputGradients Backward(const std::vector<Tensor>& inputs, const ForwardResult& forward, float dy) {
  Attributes attrs;
  attrs.Set(fused_loss::kTransposedWeight, int64_t{1});
  BackwardArgs args;
  args.attributes = &attrs;
  args.extras = forward.extras;
  for (const Tensor& t : inputs) {
    args.input_shapes.push_back(t.shape());
    args.input_dtypes.push_back(t.dtype());
  }
  args.needs_input_grad = {true, true, false, inputs.size() > 3};
  args.grad_outputs = {T({}, {dy})};
  auto grads = RunBackward(fused_loss::kOpType, KernelContext{}, args, fused_loss::kDomain);
  if (!grads.ok()) FAIL(grads.error().message);
  return *grads;
}

void CheckValues(const Tensor& actual, const std::vector<double>& expected, double tolerance,
                 const std::string& what) {
  INFO(what);
  REQUIRE(actual.defined());
  REQUIRE(actual.numel() == static_cast<int64_t>(expected.size()));
  for (size_t i = 0; i < expected.size(); ++i) {
    INFO("element " << i);
    CHECK(actual.data()[i] == Approx(expected[i]).margin(tolerance));
  }
}

// The hand case: BT = 3 rows, H = 2, V = 4, W [V, H] = [[1, 0], [0, 1], [0, 0], [0, 0]] (so a
// row's logits are its two features, then 0, 0), bias [0, 0, ln 2, 0]:
//   row 0: x = [ln 2, 0], target 0: z = [ln 2, 0, ln 2, 0], e^z = [2, 1, 2, 1], sum 6,
//          softmax [1/3, 1/6, 1/3, 1/6], loss ln 6 - ln 2 = ln 3
//   row 1: x = [0, ln 3], target 2: z = [0, ln 3, ln 2, 0], e^z = [1, 3, 2, 1], sum 7,
//          softmax [1/7, 3/7, 2/7, 1/7], loss ln 7 - ln 2 = ln 3.5
//   row 2: x = [5, -7], target -100: ignored (no loss, zero gradient, not counted)
// n = 2 counted rows: loss = (ln 3 + ln 3.5) / 2 = ln(10.5) / 2. The logits' gradient
// (softmax - onehot) / n:
//   g0 = [(1/3 - 1), 1/6, 1/3, 1/6] / 2 = [-1/3, 1/12, 1/6, 1/12]
//   g1 = [1/7, 3/7, (2/7 - 1), 1/7] / 2 = [1/14, 3/14, -5/14, 1/14]
// grad_input = g @ W (the first two entries of each g): [-1/3, 1/12], [1/14, 3/14], [0, 0].
// grad_weight [V, H] = g^T @ x: row v = g0[v] * [ln 2, 0] + g1[v] * [0, ln 3].
// grad_bias = g0 + g1 = [-11/42, 25/84, -4/21, 13/84] (sums to 0, as each g row does).
// Liger's chunk: cdiv(V, H) = 2, next_power_of_2(cdiv(3, 2)) = 2 rows, so rows 0-1 are one chunk
// and row 2 another.
const double kLn2 = std::log(2.0), kLn3 = std::log(3.0);

std::vector<Tensor> HandInputs(bool transposed) {
  const auto l2 = static_cast<float>(kLn2), l3 = static_cast<float>(kLn3);
  Tensor w = transposed ? T({4, 2}, {1, 0, 0, 1, 0, 0, 0, 0}) : T({2, 4}, {1, 0, 0, 0, 0, 1, 0, 0});
  return {T({3, 2}, {l2, 0, 0, l3, 5, -7}), w, T({3}, {0, 2, -100}).WithDType(DType::kInt64),
          T({4}, {0, 0, l2, 0})};
}

const std::vector<double> kHandGradInput = {-1.0 / 3, 1.0 / 12, 1.0 / 14, 3.0 / 14, 0, 0};
const std::vector<double> kG0 = {-1.0 / 3, 1.0 / 12, 1.0 / 6, 1.0 / 12};
const std::vector<double> kG1 = {1.0 / 14, 3.0 / 14, -5.0 / 14, 1.0 / 14};
const std::vector<double> kHandGradBias = {-11.0 / 42, 25.0 / 84, -4.0 / 21, 13.0 / 84};
// fp32 inputs (ln 2 and ln 3 rounded to 24 bits) and fp32 gemms: a few ulps of O(1) values.
constexpr double kHandTolerance = 1e-6;

TEST_CASE("fused linear cross entropy forward computes the hand case's loss and gradients",
          "[kernels]") {
  const std::vector<Tensor> inputs = HandInputs(/*transposed=*/true);
  auto forward = Forward(inputs, /*transposed=*/true);
  if (!forward.ok()) FAIL(forward.error().message);
  REQUIRE(forward->outputs.size() == 1);
  CheckValues(forward->outputs[0], {std::log(10.5) / 2}, kHandTolerance, "loss");
  CheckValues(forward->extras.at(fused_loss::kGradInput), kHandGradInput, kHandTolerance,
              "grad_input");
  std::vector<double> grad_weight;
  for (size_t v = 0; v < 4; ++v) {
    grad_weight.push_back(kG0[v] * kLn2);
    grad_weight.push_back(kG1[v] * kLn3);
  }
  CheckValues(forward->extras.at(fused_loss::kGradWeight), grad_weight, kHandTolerance,
              "grad_weight [V, H]");
  CheckValues(forward->extras.at(fused_loss::kGradBias), kHandGradBias, kHandTolerance,
              "grad_bias");
  CHECK(forward->extras.at(fused_loss::kGradInput).shape() == TensorShape{3, 2});
}

TEST_CASE("fused linear cross entropy with an [H, V] weight saves grad_weight in that layout",
          "[kernels]") {
  auto forward = Forward(HandInputs(/*transposed=*/false), /*transposed=*/false);
  if (!forward.ok()) FAIL(forward.error().message);
  CheckValues(forward->outputs[0], {std::log(10.5) / 2}, kHandTolerance, "loss");
  CheckValues(forward->extras.at(fused_loss::kGradInput), kHandGradInput, kHandTolerance,
              "grad_input");
  // [H, V]: row 0 is g0 * ln 2 (the first feature's), row 1 g1 * ln 3.
  std::vector<double> grad_weight;
  for (double g : kG0) grad_weight.push_back(g * kLn2);
  for (double g : kG1) grad_weight.push_back(g * kLn3);
  CheckValues(forward->extras.at(fused_loss::kGradWeight), grad_weight, kHandTolerance,
              "grad_weight [H, V]");
}

TEST_CASE("fused linear cross entropy backward scales the saved gradients by the upstream one",
          "[kernels]") {
  const std::vector<Tensor> inputs = HandInputs(/*transposed=*/true);
  auto forward = Forward(inputs, /*transposed=*/true);
  if (!forward.ok()) FAIL(forward.error().message);
  // The program's loss sums the scalar and divides by k accumulation steps: dy = 1/4 for k = 4.
  const InputGradients grads = Backward(inputs, *forward, 0.25f);
  REQUIRE(grads.size() == 4);
  CHECK_FALSE(grads[2].defined());  // the target has none
  std::vector<double> grad_input = kHandGradInput;
  for (double& g : grad_input) g *= 0.25;
  CheckValues(grads[0], grad_input, kHandTolerance, "grad_input / 4");
  std::vector<double> grad_bias = kHandGradBias;
  for (double& g : grad_bias) g *= 0.25;
  CheckValues(grads[3], grad_bias, kHandTolerance, "grad_bias / 4");
  const Tensor& saved_weight = forward->extras.at(fused_loss::kGradWeight);
  for (int64_t i = 0; i < saved_weight.numel(); ++i)
    CHECK(grads[1].data()[i] == saved_weight.data()[i] * 0.25f);
}

TEST_CASE("fused linear cross entropy with every row ignored has a NaN loss and no gradient",
          "[kernels]") {
  std::vector<Tensor> inputs = HandInputs(/*transposed=*/true);
  inputs[2] = T({3}, {-100, -100, -100}).WithDType(DType::kInt64);
  auto forward = Forward(inputs, /*transposed=*/true);
  if (!forward.ok()) FAIL(forward.error().message);
  // torch.nn.functional.cross_entropy's mean over no rows is 0/0.
  CHECK(std::isnan(forward->outputs[0].data()[0]));
  CheckValues(forward->extras.at(fused_loss::kGradInput), std::vector<double>(6, 0.0), 0.0,
              "grad_input");
  CheckValues(forward->extras.at(fused_loss::kGradWeight), std::vector<double>(8, 0.0), 0.0,
              "grad_weight");
}

TEST_CASE("fused linear cross entropy rejects a label outside the vocabulary", "[kernels]") {
  std::vector<Tensor> inputs = HandInputs(/*transposed=*/true);
  inputs[2] = T({3}, {0, 4, 1}).WithDType(DType::kInt64);
  auto forward = Forward(inputs, /*transposed=*/true);
  REQUIRE_FALSE(forward.ok());
  CHECK(forward.error().message == "FusedLinearCrossEntropy: label 4 is not a class in [0, 4)");
  inputs = HandInputs(/*transposed=*/true);
  inputs[1] = T({4, 3}, std::vector<float>(12, 0.0f));  // H = 3 against the input's 2
  REQUIRE_FALSE(Forward(inputs, /*transposed=*/true).ok());
}

// PyTorch (make_kernel_references.py): x [2, 5, 4] as 10 rows, W [6, 4], b [6], two rows ignored,
// F.cross_entropy(x @ W^T + b) and the gradients of cotangent * loss. Liger's chunk here:
// cdiv(6, 4) = 2, next_power_of_2(cdiv(10, 2)) = 8 rows, then 2. Tolerance as
// kernel_reference_test.cc: fp32 against fp32, only the summation order differs.
TEST_CASE("fused linear cross entropy matches torch's unfused head and cross entropy",
          "[kernels]") {
  const std::vector<Tensor> inputs = {T({2, 5, 4}, ref::flce_x), T({6, 4}, ref::flce_w),
                                      T({2, 5}, ref::flce_target).WithDType(DType::kInt64),
                                      T({6}, ref::flce_b)};
  auto forward = Forward(inputs, /*transposed=*/true);
  if (!forward.ok()) FAIL(forward.error().message);
  const auto as_double = [](const std::vector<float>& v) {
    return std::vector<double>(v.begin(), v.end());
  };
  CheckValues(forward->outputs[0], as_double(ref::flce_loss), 2e-5, "loss");
  const InputGradients grads = Backward(inputs, *forward, ref::flce_cotangent[0]);
  CheckValues(grads[0], as_double(ref::flce_grad_x), 2e-5, "grad x");
  CheckValues(grads[1], as_double(ref::flce_grad_w), 2e-5, "grad W");
  CheckValues(grads[3], as_double(ref::flce_grad_b), 2e-5, "grad b");
}

}  // namespace
}  // namespace memplan::testing
