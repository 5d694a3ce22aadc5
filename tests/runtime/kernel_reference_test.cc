// Forward values and input gradients of the CPU kernels against PyTorch's, on the inputs and
// cotangents recorded by make_kernel_references.py (kernel_references.h).

#include <catch2/catch.hpp>

#include <cmath>
#include <string>

#include "graph/ops/rsqrt_op.h"
#include "runtime/cpu/kernel_registry.h"
#include "runtime/cpu/losses.h"
#include "tests/require_value.h"
#include "tests/runtime/kernel_references.h"

namespace memplan::testing {
namespace {

// fp32 kernels against fp32 PyTorch: only summation order differs, a few ulps of O(1) values.
constexpr double kTolerance = 2e-5;

void RequireClose(const Tensor& actual, const std::vector<float>& expected,
                  const std::string& what) {
  REQUIRE(actual.defined());
  REQUIRE(actual.numel() == static_cast<int64_t>(expected.size()));
  double worst = 0.0;
  int64_t worst_index = -1;
  for (int64_t i = 0; i < actual.numel(); ++i) {
    const double error =
        std::abs(actual.data()[i] - expected[static_cast<size_t>(i)]) /
        std::max(1.0, std::abs(static_cast<double>(expected[static_cast<size_t>(i)])));
    if (error > worst) {
      worst = error;
      worst_index = i;
    }
  }
  INFO(what << ": worst element " << worst_index << " off by " << worst);
  REQUIRE(worst <= kTolerance);
}

ForwardArgs ForwardArgsOf(const Attributes& attrs, const std::vector<Tensor>& inputs,
                          int num_outputs) {
  ForwardArgs args;
  args.attributes = &attrs;
  args.inputs = inputs;
  args.num_outputs = num_outputs;
  return args;
}

// Backward's arguments after `forward` ran on `inputs`, all but the output gradients. An absent
// input (an undefined Tensor) has no shape and an undefined dtype.
BackwardArgs BackwardArgsAfter(const Attributes& attrs, const std::vector<Tensor>& inputs,
                               const ForwardResult& forward) {
  BackwardArgs args;
  args.attributes = &attrs;
  args.inputs = inputs;
  args.outputs = forward.outputs;
  args.extras = forward.extras;
  for (const Tensor& t : inputs) {
    args.input_shapes.push_back(t.shape());
    args.input_dtypes.push_back(t.dtype());
  }
  return args;
}

struct OpRun {
  ForwardResult forward;
  InputGradients grads;
};

OpRun Run(const std::string& op, const Attributes& attrs, const std::vector<Tensor>& inputs,
          const std::vector<float>& cotangent, int num_outputs = 1, std::string_view domain = "") {
  KernelContext ctx;
  auto forward = RunForward(op, ctx, ForwardArgsOf(attrs, inputs, num_outputs), domain);
  if (!forward.ok()) FAIL(forward.error().message);
  BackwardArgs bargs = BackwardArgsAfter(attrs, inputs, *forward);
  bargs.grad_outputs.resize(forward->outputs.size());
  bargs.grad_outputs[0] = Tensor::FromValues(forward->outputs[0].shape(), cotangent);
  auto grads = RunBackward(op, ctx, bargs, domain);
  if (!grads.ok()) FAIL(grads.error().message);
  return {std::move(forward).value(), std::move(grads).value()};
}

Tensor T(const std::vector<int64_t>& shape, const std::vector<float>& values) {
  return Tensor::FromValues(shape, values);
}

// Attributes holding one attribute.
Attributes With(const std::string& name, AttributeValue value) {
  Attributes attributes;
  attributes.Set(name, std::move(value));
  return attributes;
}

// A reference case's inputs, in order.
std::vector<Tensor> Inputs(const ref::GradCase& reference) {
  std::vector<Tensor> inputs;
  for (const ref::Operand& input : reference.inputs) inputs.push_back(T(input.shape, input.values));
  return inputs;
}

// Run on a reference case's inputs, backward given its cotangent.
OpRun Run(const std::string& op, const Attributes& attrs, const ref::GradCase& reference,
          int num_outputs = 1, std::string_view domain = "") {
  return Run(op, attrs, Inputs(reference), reference.cotangent, num_outputs, domain);
}

// The first output against the reference's (named `output` in a failure), then the gradient of
// every input of the reference, named in `grads`.
void RequireMatches(const OpRun& r, const ref::GradCase& reference, const std::string& output,
                    const std::vector<std::string>& grads) {
  RequireClose(r.forward.outputs[0], reference.out, output);
  REQUIRE(grads.size() == reference.grads.size());
  for (size_t i = 0; i < grads.size(); ++i) RequireClose(r.grads[i], reference.grads[i], grads[i]);
}

TEST_CASE("Conv matches torch.nn.functional.conv2d", "[kernels]") {
  Attributes a;
  a.Set("group", int64_t{2});
  a.Set("strides", std::vector<int64_t>{2, 1});
  a.Set("pads", std::vector<int64_t>{1, 1, 1, 1});
  a.Set("dilations", std::vector<int64_t>{1, 2});
  const OpRun r = Run("Conv", a, ref::conv);
  REQUIRE(r.forward.outputs[0].shape() == ref::conv_out_shape);
  RequireMatches(r, ref::conv, "output", {"dX", "dW", "dB"});
}

// Conv3d: each of the three spatial axes pads, strides or dilates differently (D 3 -> 3 with
// pad 1, H 5 -> 2 with stride 2, W 6 -> 4 with pad 1 and dilation 2), 2 groups.
TEST_CASE("Conv matches torch.nn.functional.conv3d", "[kernels]") {
  Attributes a;
  a.Set("group", int64_t{2});
  a.Set("strides", std::vector<int64_t>{1, 2, 1});
  a.Set("pads", std::vector<int64_t>{1, 0, 1, 1, 0, 1});
  a.Set("dilations", std::vector<int64_t>{1, 1, 2});
  const OpRun r = Run("Conv", a, ref::conv3d);
  REQUIRE(r.forward.outputs[0].shape() == ref::conv3d_out_shape);
  RequireMatches(r, ref::conv3d, "output", {"dX", "dW", "dB"});
}

TEST_CASE("CumSum: running sums along an axis, backward the reversed running sum", "[kernels]") {
  // x = [[1, 2, 3], [4, 5, 6]] along axis 1 (torch.cumsum(x, 1)), cotangent all ones.
  const Tensor x = T({2, 3}, {1, 2, 3, 4, 5, 6});
  const std::vector<float> ones(6, 1.0f);
  auto values = [](const Tensor& t) { return t.ToVector(); };
  // [[1, 3, 6], [4, 9, 15]]; each x[j] is in the sums i >= j: dx = [[3, 2, 1], [3, 2, 1]].
  const OpRun plain = Run("CumSum", Attributes(), {x, T({}, {1.0f})}, ones);
  CHECK(values(plain.forward.outputs[0]) == std::vector<float>{1, 3, 6, 4, 9, 15});
  CHECK(values(plain.grads[0]) == std::vector<float>{3, 2, 1, 3, 2, 1});
  // exclusive: [[0, 1, 3], [0, 4, 9]]; x[j] is in the sums i > j: [[2, 1, 0], [2, 1, 0]].
  const OpRun exclusive = Run("CumSum", With("exclusive", int64_t{1}), {x, T({}, {-1.0f})}, ones);
  CHECK(values(exclusive.forward.outputs[0]) == std::vector<float>{0, 1, 3, 0, 4, 9});
  CHECK(values(exclusive.grads[0]) == std::vector<float>{2, 1, 0, 2, 1, 0});
  // reverse: [[6, 5, 3], [15, 11, 6]]; x[j] is in the sums i <= j: [[1, 2, 3], [1, 2, 3]].
  const OpRun reverse = Run("CumSum", With("reverse", int64_t{1}), {x, T({}, {1.0f})}, ones);
  CHECK(values(reverse.forward.outputs[0]) == std::vector<float>{6, 5, 3, 15, 11, 6});
  CHECK(values(reverse.grads[0]) == std::vector<float>{1, 2, 3, 1, 2, 3});
  // Along axis 0: [[1, 2, 3], [5, 7, 9]].
  const OpRun rows = Run("CumSum", Attributes(), {x, T({}, {0.0f})}, ones);
  CHECK(values(rows.forward.outputs[0]) == std::vector<float>{1, 2, 3, 5, 7, 9});
}

TEST_CASE("BatchNormalization training matches torch batch_norm", "[kernels]") {
  Attributes a;
  a.Set("momentum", 0.9);  // torch momentum 0.1
  const OpRun r = Run("BatchNormalization", a,
                      {T(ref::bn_in0_shape, ref::bn_in0), T(ref::bn_in1_shape, ref::bn_in1),
                       T(ref::bn_in2_shape, ref::bn_in2), T({2}, ref::bn_running_mean_in),
                       T({2}, ref::bn_running_var_in)},
                      ref::bn_cotangent, /*num_outputs=*/3);
  RequireClose(r.forward.outputs[0], ref::bn_out, "Y");
  RequireClose(r.forward.outputs[1], ref::bn_running_mean_out, "running mean");
  RequireClose(r.forward.outputs[2], ref::bn_running_var_out, "running var (unbiased)");
  RequireClose(r.grads[0], ref::bn_grad0, "dX");
  RequireClose(r.grads[1], ref::bn_grad1, "dScale");
  RequireClose(r.grads[2], ref::bn_grad2, "dB");
}

TEST_CASE("LayerNormalization matches torch layer_norm", "[kernels]") {
  const OpRun r = Run("LayerNormalization", Attributes(), ref::ln);
  RequireMatches(r, ref::ln, "Y", {"dX", "dScale", "dB"});
}

TEST_CASE("LayerNormalization's backward reads mean and invstd from declared Mean/InvStdDev",
          "[kernels]") {
  // With the outputs declared the registry saves them, not the extras (OutputOrExtra): backward
  // gets the outputs alone and must give torch's gradients.
  const Attributes a;
  KernelContext ctx;
  const std::vector<Tensor> inputs = Inputs(ref::ln);
  auto forward = RunForward("LayerNormalization", ctx, ForwardArgsOf(a, inputs, 3));
  REQUIRE(forward.ok());
  REQUIRE(forward->outputs.size() == 3);
  BackwardArgs bargs = BackwardArgsAfter(a, inputs, *forward);
  bargs.extras.clear();
  bargs.grad_outputs = {Tensor::FromValues(forward->outputs[0].shape(), ref::ln.cotangent),
                        Tensor(), Tensor()};
  auto grads = RunBackward("LayerNormalization", ctx, bargs);
  if (!grads.ok()) FAIL(grads.error().message);
  RequireClose((*grads)[0], ref::ln.grads[0], "dX");
  RequireClose((*grads)[1], ref::ln.grads[1], "dScale");
  RequireClose((*grads)[2], ref::ln.grads[2], "dB");
}

Attributes PoolAttributes() {
  Attributes a;
  a.Set("kernel_shape", std::vector<int64_t>{3, 3});
  a.Set("strides", std::vector<int64_t>{2, 2});
  a.Set("pads", std::vector<int64_t>{1, 1, 1, 1});
  a.Set("ceil_mode", int64_t{1});
  return a;
}

TEST_CASE("MaxPool and AveragePool match torch with ceil_mode and padding", "[kernels]") {
  SECTION("MaxPool") {
    const OpRun r = Run("MaxPool", PoolAttributes(), ref::maxpool);
    REQUIRE(r.forward.outputs[0].shape() == ref::maxpool_out_shape);
    RequireMatches(r, ref::maxpool, "Y", {"dX"});
  }
  SECTION("AveragePool, count_include_pad = 0") {
    const OpRun r = Run("AveragePool", PoolAttributes(), ref::avgpool);
    REQUIRE(r.forward.outputs[0].shape() == ref::avgpool_out_shape);
    RequireMatches(r, ref::avgpool, "Y", {"dX"});
  }
}

TEST_CASE("activations, softmax and products match torch", "[kernels]") {
  // One input, one gradient.
  const struct {
    std::string section, op;
    Attributes attributes;
    const ref::GradCase& reference;
  } unary[] = {
      {"Gelu (erf)", "Gelu", {}, ref::gelu},
      {"Gelu (tanh)", "Gelu", With("approximate", std::string("tanh")), ref::gelu_tanh},
      {"HardSwish", "HardSwish", {}, ref::hardswish},
      {"HardSigmoid with torch's alpha 1/6", "HardSigmoid", With("alpha", 1.0 / 6.0),
       ref::hardsigmoid},
      {"LeakyRelu, slope 0.2", "LeakyRelu", With("alpha", 0.2), ref::leaky_relu},
      {"Softmax on axis 1", "Softmax", With("axis", int64_t{1}), ref::softmax},
      {"LogSoftmax", "LogSoftmax", {}, ref::logsoftmax},
  };
  for (const auto& c : unary) {
    DYNAMIC_SECTION(c.section) {
      RequireMatches(Run(c.op, c.attributes, c.reference), c.reference, "Y", {"dX"});
    }
  }
  SECTION("memplan:Rsqrt is torch.rsqrt") {
    const OpRun r = Run(rsqrt::kOpType, Attributes(), ref::rsqrt, 1, rsqrt::kDomain);
    RequireMatches(r, ref::rsqrt, "Y", {"dX"});
  }
  SECTION("Trilu: triu(x, 1) and tril(x, -1)") {
    const OpRun upper =
        Run("Trilu", Attributes(), {T(ref::triu1_in0_shape, ref::triu1_in0), T({}, {1.0f})},
            ref::triu1_cotangent);
    RequireMatches(upper, ref::triu1, "Y", {"dX"});
    Attributes lower_attrs;
    lower_attrs.Set("upper", int64_t{0});
    const OpRun lower =
        Run("Trilu", lower_attrs, {T(ref::tril_neg1_in0_shape, ref::tril_neg1_in0), T({}, {-1.0f})},
            ref::tril_neg1_cotangent);
    RequireMatches(lower, ref::tril_neg1, "Y", {"dX"});
  }
  SECTION("MatMul with broadcast batch") {
    const OpRun r = Run("MatMul", Attributes(), ref::matmul);
    REQUIRE(r.forward.outputs[0].shape() == ref::matmul_out_shape);
    RequireMatches(r, ref::matmul, "Y", {"dA", "dB"});
  }
  SECTION("Gemm transA transB alpha beta") {
    Attributes a;
    a.Set("transA", int64_t{1});
    a.Set("transB", int64_t{1});
    a.Set("alpha", 0.5);
    a.Set("beta", 2.0);
    const OpRun r = Run("Gemm", a, ref::gemm);
    RequireMatches(r, ref::gemm, "Y", {"dA", "dB", "dC"});
  }
  SECTION("Pow with broadcast exponent") {
    const OpRun r = Run("Pow", Attributes(), ref::pow);
    RequireMatches(r, ref::pow, "Y", {"dBase", "dExponent"});
  }
}

// `kind`'s loss and its gradient (grad_scale 1) against torch's, both within RequireClose.
void RequireLossClose(LossKind kind, const Tensor& prediction, const Tensor& target,
                      const std::vector<float>& expected_loss,
                      const std::vector<float>& expected_grad, const std::string& grad_name) {
  const KernelContext ctx;
  auto loss = LossForward(kind, ctx, prediction, target);
  REQUIRE(loss.ok());
  RequireClose(*loss, expected_loss, "loss");
  auto grad = LossBackward(kind, ctx, prediction, target, 1.0f);
  REQUIRE(grad.ok());
  RequireClose(*grad, expected_grad, grad_name);
}

TEST_CASE("losses match torch cross_entropy and mse_loss", "[kernels]") {
  const KernelContext ctx;
  SECTION("cross entropy with integer labels") {
    const Tensor logits = T({4, 5}, ref::ce_logits);
    const Tensor labels = Tensor::FromValues({4}, ref::ce_labels, DType::kInt64);
    RequireLossClose(LossKind::kCrossEntropy, logits, labels, ref::ce_loss, ref::ce_grad,
                     "dLogits");
  }
  SECTION("per-pixel cross entropy over [N, C, H, W], an ignored pixel") {
    const Tensor logits = T({2, 3, 2, 2}, ref::seg_logits);
    const Tensor labels = Tensor::FromValues({2, 2, 2}, ref::seg_labels, DType::kInt64);
    RequireLossClose(LossKind::kCrossEntropy, logits, labels, ref::seg_loss, ref::seg_grad,
                     "dLogits");
    Tensor log_prob =
        Tensor::Zeros({2, 3, 2, 2}, DType::kFloat32, *ctx.allocator, MemoryCategory::kOther);
    REQUIRE(CrossEntropyLogProb(logits, log_prob).ok());
    RequireClose(log_prob, ref::seg_log_prob, "log_softmax(dim=1)");
  }
  SECTION("the program's logits: class-last [N, S, V] as rows, [N, C, H, W] as they are") {
    const Tensor lm = T({2, 3, 4}, std::vector<float>(24, 0.0f));
    CHECK(CrossEntropyLogitsView(lm).shape() == std::vector<int64_t>{6, 4});
    const Tensor seg = T({2, 3, 2, 2}, ref::seg_logits);
    CHECK(CrossEntropyLogitsView(seg).shape() == std::vector<int64_t>{2, 3, 2, 2});
  }
  SECTION("mean squared error") {
    RequireLossClose(LossKind::kMse, T({2, 3}, ref::mse_pred), T({2, 3}, ref::mse_target),
                     ref::mse_loss, ref::mse_grad, "dPrediction");
  }
  SECTION("sum: loss = sum, gradient = grad_scale everywhere") {
    const Tensor x = T({3}, {1.0f, -2.0f, 4.5f});
    auto loss = LossForward(LossKind::kSum, ctx, x, Tensor());
    REQUIRE(loss.ok());
    CHECK(loss->data()[0] == 3.5f);  // 1 - 2 + 4.5
    auto grad = LossBackward(LossKind::kSum, ctx, x, Tensor(), 0.25f);
    REQUIRE(grad.ok());
    CHECK(grad->ToVector() == std::vector<float>{0.25f, 0.25f, 0.25f});
  }
  SECTION("a label outside the classes is an error") {
    auto loss = LossForward(LossKind::kCrossEntropy, ctx, T({1, 2}, {0.0f, 1.0f}),
                            Tensor::FromValues({1}, {2.0f}, DType::kInt64));
    REQUIRE_FALSE(loss.ok());
    CHECK_THAT(loss.error().message, Catch::Contains("label 2"));
  }
}

TEST_CASE("Einsum matches torch.einsum on two-operand contractions", "[kernels]") {
  const auto check = [](const char* equation, const std::vector<int64_t>& a_shape,
                        const std::vector<float>& a, const std::vector<int64_t>& b_shape,
                        const std::vector<float>& b, const std::vector<float>& cotangent,
                        const std::vector<float>& out, const std::vector<float>& grad_a,
                        const std::vector<float>& grad_b) {
    INFO(equation);
    Attributes attrs;
    attrs.Set("equation", std::string(equation));
    const OpRun r = Run("Einsum", attrs, {T(a_shape, a), T(b_shape, b)}, cotangent);
    RequireClose(r.forward.outputs[0], out, "Y");
    RequireClose(r.grads[0], grad_a, "dA");
    RequireClose(r.grads[1], grad_b, "dB");
  };
  check("bhid,bhjd->bhij", ref::einsum_scores_in0_shape, ref::einsum_scores_in0,
        ref::einsum_scores_in1_shape, ref::einsum_scores_in1, ref::einsum_scores_cotangent,
        ref::einsum_scores_out, ref::einsum_scores_grad0, ref::einsum_scores_grad1);
  check("ikj,jl->lik", ref::einsum_permuted_in0_shape, ref::einsum_permuted_in0,
        ref::einsum_permuted_in1_shape, ref::einsum_permuted_in1, ref::einsum_permuted_cotangent,
        ref::einsum_permuted_out, ref::einsum_permuted_grad0, ref::einsum_permuted_grad1);
  check("B G H I J, B G H J D -> B G H I D", ref::einsum_maxvit_in0_shape, ref::einsum_maxvit_in0,
        ref::einsum_maxvit_in1_shape, ref::einsum_maxvit_in1, ref::einsum_maxvit_cotangent,
        ref::einsum_maxvit_out, ref::einsum_maxvit_grad0, ref::einsum_maxvit_grad1);
}

TEST_CASE("Einsum forms the CPU kernel does not run are errors naming the equation", "[kernels]") {
  const auto error = [](const char* equation, const std::vector<Tensor>& inputs) {
    Attributes attrs;
    attrs.Set("equation", std::string(equation));
    ForwardArgs args;
    args.attributes = &attrs;
    args.inputs = inputs;
    return testing::RequireError(RunForward("Einsum", KernelContext(), args));
  };
  const Tensor m = T({2, 2}, {1, 2, 3, 4});
  CHECK(error("ii,ij->j", {m, m}) ==
        "Einsum: the CPU kernel does not run 'ii,ij->j': the letter 'i' repeats in a term");
  CHECK(error("ij,jk->i", {m, m}) ==
        "Einsum: the CPU kernel does not run 'ij,jk->i': the letter 'k' is summed in one operand "
        "only");
  CHECK(error("...j,jk->...k", {m, m}) ==
        "Einsum: the CPU kernel does not run '...j,jk->...k': an ellipsis");
  CHECK(error("ij,jk->ik", {m, T({1, 2}, {1, 2})}) ==
        "Einsum: the CPU kernel does not run 'ij,jk->ik': the letter 'j' has two sizes (a "
        "broadcast)");
}

TEST_CASE("Clip matches torch.clamp, from inputs and from opset-6 attributes", "[kernels]") {
  const Tensor x = T(ref::clip_in0_shape, ref::clip_in0);
  const OpRun from_inputs =
      Run("Clip", Attributes(), {x, T({}, {-0.5f}), T({}, {0.75f})}, ref::clip_cotangent);
  RequireMatches(from_inputs, ref::clip, "Y", {"dX"});
  Attributes bounds;
  bounds.Set("min", -0.5);
  bounds.Set("max", 0.75);
  const OpRun from_attributes = Run("Clip", bounds, {x}, ref::clip_cotangent);
  RequireMatches(from_attributes, ref::clip, "Y", {"dX"});
}

TEST_CASE("Pad matches torch.nn.functional.pad in the four modes", "[kernels]") {
  // torch pads (w_begin, w_end, h_begin, h_end) = (2, 1, 1, 2) are ONNX's [0, 0, 1, 2, 0, 0, 2, 1]
  // (all begins, then all ends); the constant case crops one column at the end (w_end = -1).
  const auto pads = [](std::vector<float> values) { return T({8}, std::move(values)); };
  SECTION("constant 0.5, from inputs") {
    const OpRun r = Run("Pad", Attributes(),
                        {T(ref::pad_constant_in0_shape, ref::pad_constant_in0),
                         pads({0, 0, 1, 2, 0, 0, 2, -1}), T({}, {0.5f})},
                        ref::pad_constant_cotangent);
    RequireMatches(r, ref::pad_constant, "Y", {"dX"});
  }
  SECTION("reflect on axes 2 and 3 (opset 18's axes input)") {
    Attributes a;
    a.Set("mode", std::string("reflect"));
    const OpRun r = Run("Pad", a,
                        {T(ref::pad_reflect_in0_shape, ref::pad_reflect_in0), T({4}, {1, 2, 2, 1}),
                         Tensor(), T({2}, {2, 3})},
                        ref::pad_reflect_cotangent);
    RequireMatches(r, ref::pad_reflect, "Y", {"dX"});
  }
  SECTION("edge, pads as an attribute (opset 2)") {
    Attributes a;
    a.Set("mode", std::string("edge"));
    a.Set("pads", std::vector<int64_t>{0, 0, 1, 2, 0, 0, 2, 1});
    const OpRun r = Run("Pad", a, ref::pad_edge);
    RequireMatches(r, ref::pad_edge, "Y", {"dX"});
  }
  SECTION("wrap") {
    Attributes a;
    a.Set("mode", std::string("wrap"));
    const OpRun r = Run(
        "Pad", a, {T(ref::pad_wrap_in0_shape, ref::pad_wrap_in0), pads({0, 0, 1, 2, 0, 0, 2, 1})},
        ref::pad_wrap_cotangent);
    RequireMatches(r, ref::pad_wrap, "Y", {"dX"});
  }
}

TEST_CASE("CastLike takes the second input's dtype", "[kernels]") {
  // 1 + 2^-12 is not an fp16 value (11 significant bits): rounded to nearest it is 1.
  const Tensor like = Tensor::FromValues({1}, {0.0f}, DType::kFloat16);
  ForwardArgs args;
  args.inputs = {T({2}, {1.0f + 1.0f / 4096.0f, 3.0f}), like};
  auto result = RunForward("CastLike", KernelContext(), args);
  REQUIRE(result.ok());
  CHECK(result->outputs[0].dtype() == DType::kFloat16);
  CHECK(result->outputs[0].ToVector() == std::vector<float>{1.0f, 3.0f});
}

TEST_CASE("ScatterND matches torch index_put", "[kernels]") {
  const OpRun r = Run("ScatterND", Attributes(),
                      {T(ref::scatternd_in0_shape, ref::scatternd_in0),
                       Tensor::FromValues({2, 2}, {1, 0, 3, 2}, DType::kInt64),
                       T(ref::scatternd_in1_shape, ref::scatternd_in1)},
                      ref::scatternd_cotangent);
  RequireClose(r.forward.outputs[0], ref::scatternd_out, "Y");
  RequireClose(r.grads[0], ref::scatternd_grad0, "dData");
  RequireClose(r.grads[2], ref::scatternd_grad1, "dUpdates");
}

TEST_CASE("GatherND matches torch x[i, j], a repeated slice's gradient summed", "[kernels]") {
  const OpRun r = Run("GatherND", Attributes(),
                      {T(ref::gathernd_in0_shape, ref::gathernd_in0),
                       Tensor::FromValues({3, 2}, {1, 0, 3, 2, 1, 0}, DType::kInt64)},
                      ref::gathernd_cotangent);
  CHECK(r.forward.outputs[0].shape() == TensorShape(ref::gathernd_out_shape));
  RequireClose(r.forward.outputs[0], ref::gathernd_out, "Y");
  RequireClose(r.grads[0], ref::gathernd_grad0, "dData");
}

TEST_CASE("comparisons broadcast and give booleans, Not negates", "[kernels]") {
  const auto compare = [](const char* op) {
    ForwardArgs args;
    args.inputs = {T({3}, {1, 2, 3}), T({1}, {2})};
    auto result = RunForward(op, KernelContext(), args);
    REQUIRE(result.ok());
    CHECK(result->outputs[0].dtype() == DType::kBool);
    return result->outputs[0].ToVector();
  };
  CHECK(compare("Equal") == std::vector<float>{0, 1, 0});
  CHECK(compare("Less") == std::vector<float>{1, 0, 0});
  CHECK(compare("LessOrEqual") == std::vector<float>{1, 1, 0});
  CHECK(compare("Greater") == std::vector<float>{0, 0, 1});
  CHECK(compare("GreaterOrEqual") == std::vector<float>{0, 1, 1});
  ForwardArgs args;
  args.inputs = {Tensor::FromValues({3}, {0, 1, 1}, DType::kBool)};
  auto negated = RunForward("Not", KernelContext(), args);
  REQUIRE(negated.ok());
  CHECK(negated->outputs[0].ToVector() == std::vector<float>{1, 0, 0});
}

TEST_CASE("Resize matches torch.nn.functional.interpolate", "[kernels]") {
  const auto resize = [](const char* mode, const char* transform, const std::vector<int64_t>& shape,
                         const std::vector<float>& x, const Tensor& scales, const Tensor& sizes,
                         const std::vector<float>& cotangent) {
    Attributes a;
    a.Set("mode", std::string(mode));
    a.Set("coordinate_transformation_mode", std::string(transform));
    a.Set("nearest_mode", std::string("floor"));
    return Run("Resize", a, {T(shape, x), Tensor(), scales, sizes}, cotangent);
  };
  const Tensor twice = T({4}, {1, 1, 2, 2});
  SECTION("bilinear, pytorch_half_pixel, scale 2") {
    const OpRun r =
        resize("linear", "pytorch_half_pixel", ref::resize_bilinear_in0_shape,
               ref::resize_bilinear_in0, twice, Tensor(), ref::resize_bilinear_cotangent);
    RequireMatches(r, ref::resize_bilinear, "Y", {"dX"});
  }
  SECTION("bilinear, align_corners, scale 2") {
    const OpRun r = resize("linear", "align_corners", ref::resize_corners_in0_shape,
                           ref::resize_corners_in0, twice, Tensor(), ref::resize_corners_cotangent);
    RequireMatches(r, ref::resize_corners, "Y", {"dX"});
  }
  SECTION("nearest, asymmetric floor, scale 2") {
    const OpRun r = resize("nearest", "asymmetric", ref::resize_nearest_in0_shape,
                           ref::resize_nearest_in0, twice, Tensor(), ref::resize_nearest_cotangent);
    RequireMatches(r, ref::resize_nearest, "Y", {"dX"});
  }
  SECTION("bilinear down to sizes [1, 2, 3, 5]") {
    const OpRun r =
        resize("linear", "pytorch_half_pixel", ref::resize_down_in0_shape, ref::resize_down_in0,
               T({0}, {}), T({4}, {1, 2, 3, 5}), ref::resize_down_cotangent);
    RequireMatches(r, ref::resize_down, "Y", {"dX"});
  }
}

TEST_CASE("InstanceNormalization matches torch instance_norm", "[kernels]") {
  const OpRun r = Run("InstanceNormalization", Attributes(), ref::instance_norm);
  RequireMatches(r, ref::instance_norm, "Y", {"dX", "dScale", "dB"});
  // What batch_norm on [1, N*C, ...] keeps: the weight repeated per plane, fp32 statistics.
  CHECK(r.forward.extras.at("repeated_weight").numel() == 6);
  CHECK(r.forward.extras.at("mean").dtype() == DType::kFloat32);
}

TEST_CASE("GroupNormalization matches torch group_norm", "[kernels]") {
  Attributes a;
  a.Set("num_groups", int64_t{2});
  const Tensor x = T(ref::group_norm_in0_shape, ref::group_norm_in0);
  const OpRun r = Run("GroupNormalization", a,
                      {x, T(ref::group_norm_in1_shape, ref::group_norm_in1),
                       T(ref::group_norm_in2_shape, ref::group_norm_in2)},
                      ref::group_norm_cotangent);
  RequireMatches(r, ref::group_norm, "Y", {"dX", "dScale", "dB"});
  CHECK(r.forward.extras.at("invstd").shape() == TensorShape{2, 2});  // [N, G]
  // Opset 18's per-group scale and bias equal per-channel ones repeated over each group.
  ForwardArgs per_group, repeated;
  per_group.attributes = repeated.attributes = &a;
  per_group.inputs = {x, T({2}, {0.5f, 2.0f}), T({2}, {1.0f, -1.0f})};
  repeated.inputs = {x, T({4}, {0.5f, 0.5f, 2.0f, 2.0f}), T({4}, {1.0f, 1.0f, -1.0f, -1.0f})};
  auto by_group = RunForward("GroupNormalization", KernelContext(), per_group);
  auto by_channel = RunForward("GroupNormalization", KernelContext(), repeated);
  REQUIRE(by_group.ok());
  REQUIRE(by_channel.ok());
  CHECK(by_group->outputs[0].ToVector() == by_channel->outputs[0].ToVector());
}

TEST_CASE("ConvTranspose matches torch conv_transpose1d and conv_transpose2d", "[kernels]") {
  SECTION("2-D, bias, stride 2, pads 1, output_padding 1") {
    Attributes a;
    a.Set("strides", std::vector<int64_t>{2, 2});
    a.Set("pads", std::vector<int64_t>{1, 1, 1, 1});
    a.Set("output_padding", std::vector<int64_t>{1, 1});
    const OpRun r = Run("ConvTranspose", a, ref::convt);
    CHECK(r.forward.outputs[0].shape() == TensorShape(ref::convt_out_shape));
    RequireMatches(r, ref::convt, "Y", {"dX", "dW", "dB"});
  }
  SECTION("2-D, 2 groups, stride (2, 1), pads (0, 1), dilation (1, 2), output_padding (1, 0)") {
    Attributes a;
    a.Set("group", int64_t{2});
    a.Set("strides", std::vector<int64_t>{2, 1});
    a.Set("pads", std::vector<int64_t>{0, 1, 0, 1});
    a.Set("dilations", std::vector<int64_t>{1, 2});
    a.Set("output_padding", std::vector<int64_t>{1, 0});
    const OpRun r = Run("ConvTranspose", a, ref::convt_grouped);
    CHECK(r.forward.outputs[0].shape() == TensorShape(ref::convt_grouped_out_shape));
    RequireMatches(r, ref::convt_grouped, "Y", {"dX", "dW"});
  }
  SECTION("1-D, stride 2, pads 1, output_padding 1") {
    Attributes a;
    a.Set("strides", std::vector<int64_t>{2});
    a.Set("pads", std::vector<int64_t>{1, 1});
    a.Set("output_padding", std::vector<int64_t>{1});
    const OpRun r = Run("ConvTranspose", a, ref::convt_1d);
    CHECK(r.forward.outputs[0].shape() == TensorShape(ref::convt_1d_out_shape));
    RequireMatches(r, ref::convt_1d, "Y", {"dX", "dW"});
  }
}

TEST_CASE("ReduceMax matches torch.amax, ties sharing the gradient", "[kernels]") {
  Attributes a;
  a.Set("axes", std::vector<int64_t>{1, 3});
  const OpRun r = Run("ReduceMax", a, ref::amax);
  CHECK(r.forward.outputs[0].shape() == TensorShape(ref::amax_out_shape));
  RequireMatches(r, ref::amax, "Y", {"dX"});
}

TEST_CASE("Tile matches torch repeat", "[kernels]") {
  const OpRun r = Run(
      "Tile", Attributes(),
      {T(ref::tile_in0_shape, ref::tile_in0), Tensor::FromValues({3}, {2, 1, 3}, DType::kInt64)},
      ref::tile_cotangent);
  CHECK(r.forward.outputs[0].shape() == TensorShape(ref::tile_out_shape));
  RequireMatches(r, ref::tile, "Y", {"dX"});
}

// A recurrent node on ONNX's input slots (X, W, R, B, sequence_lens, initial_h[, initial_c]):
// forward, then backward with the reference's one cotangent split over Y, Y_h (and Y_c). The
// returned `outputs` is Y, Y_h (and Y_c) flattened into one vector, as the reference's.
struct RecurrentRun {
  std::vector<float> outputs;
  InputGradients grads;
};

RecurrentRun RunRecurrent(const std::string& op, const Attributes& attrs,
                          const std::vector<Tensor>& inputs, int num_outputs,
                          const std::vector<float>& cotangent) {
  KernelContext ctx;
  auto forward = RunForward(op, ctx, ForwardArgsOf(attrs, inputs, num_outputs));
  if (!forward.ok()) FAIL(forward.error().message);
  REQUIRE(forward->outputs.size() == static_cast<size_t>(num_outputs));
  RecurrentRun run;
  BackwardArgs bargs = BackwardArgsAfter(attrs, inputs, *forward);
  size_t offset = 0;
  for (const Tensor& out : forward->outputs) {
    run.outputs.insert(run.outputs.end(), out.data(), out.data() + out.numel());
    const auto n = static_cast<size_t>(out.numel());
    REQUIRE(offset + n <= cotangent.size());
    bargs.grad_outputs.push_back(Tensor::FromValues(
        out.shape(),
        std::vector<float>(cotangent.begin() + static_cast<std::ptrdiff_t>(offset),
                           cotangent.begin() + static_cast<std::ptrdiff_t>(offset + n))));
    offset += n;
  }
  REQUIRE(offset == cotangent.size());
  auto grads = RunBackward(op, ctx, bargs);
  if (!grads.ok()) FAIL(grads.error().message);
  run.grads = std::move(grads).value();
  return run;
}

void RequireCloseValues(const std::vector<float>& actual, const std::vector<float>& expected,
                        const std::string& what) {
  RequireClose(Tensor::FromValues({static_cast<int64_t>(actual.size())}, actual), expected, what);
}

// Runs one of make_kernel_references.py's recurrent cases (inputs X, W, R, B and the initial
// states; sequence_lens absent) and checks every output and gradient. The case's output is Y,
// Y_h[, Y_c] flattened into one vector.
void CheckRecurrent(const std::string& op, const Attributes& attrs, int num_outputs,
                    const ref::GradCase& reference) {
  std::vector<Tensor> inputs = Inputs(reference);
  inputs.insert(inputs.begin() + 4, Tensor());  // sequence_lens
  const RecurrentRun r = RunRecurrent(op, attrs, inputs, num_outputs, reference.cotangent);
  RequireCloseValues(r.outputs, reference.out, "Y, Y_h, Y_c");
  CHECK_FALSE(r.grads[4].defined());
  const char* names[] = {"dX", "dW", "dR", "dB", "dinitial_h", "dinitial_c"};
  for (size_t i = 0; i < reference.grads.size(); ++i)
    RequireClose(r.grads[i < 4 ? i : i + 1], reference.grads[i], names[i]);
}

TEST_CASE("LSTM matches torch.lstm, bidirectional with initial states", "[kernels]") {
  Attributes a;
  a.Set("direction", std::string("bidirectional"));
  a.Set("hidden_size", int64_t{2});
  CheckRecurrent("LSTM", a, 3, ref::lstm_bidi);
}

TEST_CASE("GRU matches torch.gru, forward and reverse", "[kernels]") {
  Attributes a;
  a.Set("linear_before_reset", int64_t{1});  // what torch exports for nn.GRU
  CheckRecurrent("GRU", a, 2, ref::gru);
  a.Set("direction", std::string("reverse"));
  CheckRecurrent("GRU", a, 2, ref::gru_reverse);
}

TEST_CASE("RNN matches torch.rnn_tanh, bidirectional", "[kernels]") {
  Attributes a;
  a.Set("direction", std::string("bidirectional"));
  CheckRecurrent("RNN", a, 2, ref::rnn_bidi);
}

// `values` of shape [a, b, c] rearranged as [b, a, c].
std::vector<float> SwapLeadingAxes(const std::vector<float>& values, int64_t a, int64_t b,
                                   int64_t c) {
  std::vector<float> out(values.size());
  for (int64_t i = 0; i < a; ++i)
    for (int64_t j = 0; j < b; ++j)
      for (int64_t k = 0; k < c; ++k)
        out[static_cast<size_t>((j * a + i) * c + k)] =
            values[static_cast<size_t>((i * b + j) * c + k)];
  return out;
}

// layout = 1 is layout 0 with X [batch, T, I], Y [batch, T, D, H] and the states [batch, D, H]:
// the same numbers, transposed (the LSTM reference above, rearranged by hand).
TEST_CASE("LSTM with layout 1 (batch first) is layout 0 transposed", "[kernels]") {
  const int64_t steps = 3, batch = 2, input = 3, dirs = 2, hidden = 2;
  // X [T, batch, I] -> [batch, T, I]; a state [D, batch, H] -> [batch, D, H].
  auto batch_first_x = [&](const std::vector<float>& x) {
    return SwapLeadingAxes(x, steps, batch, input);
  };
  auto batch_first_state = [&](const std::vector<float>& s) {
    return SwapLeadingAxes(s, dirs, batch, hidden);
  };
  Attributes a;
  a.Set("direction", std::string("bidirectional"));
  a.Set("layout", int64_t{1});
  // Forward only: a zero cotangent.
  const size_t outputs = ref::lstm_bidi_out.size();
  const RecurrentRun r =
      RunRecurrent("LSTM", a,
                   {T({batch, steps, input}, batch_first_x(ref::lstm_bidi_in0)),
                    T(ref::lstm_bidi_in1_shape, ref::lstm_bidi_in1),
                    T(ref::lstm_bidi_in2_shape, ref::lstm_bidi_in2),
                    T(ref::lstm_bidi_in3_shape, ref::lstm_bidi_in3), Tensor(),
                    T({batch, dirs, hidden}, batch_first_state(ref::lstm_bidi_in4)),
                    T({batch, dirs, hidden}, batch_first_state(ref::lstm_bidi_in5))},
                   3, std::vector<float>(outputs, 0.0f));
  const int64_t y_size = steps * dirs * batch * hidden, state = dirs * batch * hidden;
  for (int64_t t = 0; t < steps; ++t)
    for (int64_t d = 0; d < dirs; ++d)
      for (int64_t b = 0; b < batch; ++b)
        for (int64_t j = 0; j < hidden; ++j)
          CHECK(r.outputs[static_cast<size_t>(((b * steps + t) * dirs + d) * hidden + j)] ==
                Approx(ref::lstm_bidi_out[static_cast<size_t>(
                           ((t * dirs + d) * batch + b) * hidden + j)])
                    .margin(2e-5));
  for (int64_t k = 0; k < 2; ++k) {  // Y_h, then Y_c
    const auto from = ref::lstm_bidi_out.begin() + static_cast<std::ptrdiff_t>(y_size + k * state);
    const std::vector<float> expected =
        batch_first_state(std::vector<float>(from, from + static_cast<std::ptrdiff_t>(state)));
    for (int64_t e = 0; e < state; ++e)
      CHECK(r.outputs[static_cast<size_t>(y_size + k * state + e)] ==
            Approx(expected[static_cast<size_t>(e)]).margin(2e-5));
  }
}

TEST_CASE("recurrent options the CPU kernel does not run are errors naming them", "[kernels]") {
  KernelContext ctx;
  ForwardArgs args;
  Attributes a;
  args.attributes = &a;
  args.inputs = {T(ref::gru_in0_shape, ref::gru_in0), T(ref::gru_in1_shape, ref::gru_in1),
                 T(ref::gru_in2_shape, ref::gru_in2)};
  args.num_outputs = 2;
  // ONNX's default linear_before_reset = 0 (torch always exports 1).
  auto result = RunForward("GRU", ctx, args);
  REQUIRE_FALSE(result.ok());
  CHECK(result.error().message ==
        "GRU: linear_before_reset = 0 is not supported by the CPU kernel");
  a.Set("linear_before_reset", int64_t{1});
  a.Set("activations", std::vector<std::string>{"HardSigmoid", "Tanh"});
  result = RunForward("GRU", ctx, args);
  REQUIRE_FALSE(result.ok());
  CHECK(result.error().message ==
        "GRU: activation 'HardSigmoid' is not supported by the CPU kernel");
}

TEST_CASE("RMSNormalization matches x * rsqrt(mean(x^2) + eps) * w", "[kernels]") {
  const OpRun last = Run("RMSNormalization", Attributes(), ref::rms_norm);
  RequireClose(last.forward.outputs[0], ref::rms_norm_out, "Y");
  // rstd is kept for backward (the kernels' "invstd"), one per row: [2, 3, 1].
  CHECK(last.forward.extras.at("invstd").shape() == TensorShape{2, 3, 1});
  RequireClose(last.grads[0], ref::rms_norm_grad0, "dX");
  RequireClose(last.grads[1], ref::rms_norm_grad1, "dScale");

  // Over the last two axes; ONNX Runtime's name for the op runs the same kernel.
  Attributes a;
  a.Set("axis", int64_t{-2});
  for (const char* op : {"RMSNormalization", "SimplifiedLayerNormalization"}) {
    INFO(op);
    const OpRun two = Run(op, a, ref::rms_norm_2d);
    RequireMatches(two, ref::rms_norm_2d, "Y", {"dX", "dScale"});
  }
  // So does its com.microsoft registration.
  const OpRun contrib =
      Run("SimplifiedLayerNormalization", a, ref::rms_norm_2d, 1, "com.microsoft");
  RequireMatches(contrib, ref::rms_norm_2d, "Y", {"dX", "dScale"});
}

TEST_CASE("SimplifiedLayerNormalization's backward reads rstd from a declared inv_std_var",
          "[kernels]") {
  // With the output declared the registry saves it, not an extra (OutputOrExtra): backward gets
  // the output alone.
  Attributes a;
  a.Set("axis", int64_t{-2});
  KernelContext ctx;
  const std::vector<Tensor> inputs = Inputs(ref::rms_norm_2d);
  auto forward =
      RunForward("SimplifiedLayerNormalization", ctx, ForwardArgsOf(a, inputs, 2), "com.microsoft");
  REQUIRE(forward.ok());
  REQUIRE(forward->outputs.size() == 2);
  BackwardArgs bargs = BackwardArgsAfter(a, inputs, *forward);
  bargs.extras.clear();
  bargs.grad_outputs = {Tensor::FromValues(forward->outputs[0].shape(), ref::rms_norm_2d.cotangent),
                        Tensor()};
  auto grads = RunBackward("SimplifiedLayerNormalization", ctx, bargs, "com.microsoft");
  if (!grads.ok()) FAIL(grads.error().message);
  RequireClose((*grads)[0], ref::rms_norm_2d.grads[0], "dX");
  RequireClose((*grads)[1], ref::rms_norm_2d.grads[1], "dScale");
}

TEST_CASE("com.microsoft BiasGelu matches torch gelu(A + B)", "[kernels]") {
  const OpRun r = Run("BiasGelu", Attributes(), ref::bias_gelu, 1, "com.microsoft");
  RequireMatches(r, ref::bias_gelu, "Y", {"dA", "dB"});
  // The sum is kept for backward (the registry's "gelu_input"), shaped as A.
  CHECK(r.forward.extras.at("gelu_input").shape() == TensorShape{2, 3, 5});
}

TEST_CASE("com.microsoft FastGelu matches torch gelu(X (+ bias), approximate='tanh')",
          "[kernels]") {
  const OpRun plain = Run("FastGelu", Attributes(), ref::fast_gelu, 1, "com.microsoft");
  RequireMatches(plain, ref::fast_gelu, "Y", {"dX"});
  // Without a bias X itself is what backward reads: nothing else is kept.
  CHECK(plain.forward.extras.empty());
  const OpRun biased = Run("FastGelu", Attributes(), ref::fast_gelu_bias, 1, "com.microsoft");
  RequireMatches(biased, ref::fast_gelu_bias, "Y", {"dX", "dBias"});
}

TEST_CASE("com.microsoft SkipLayerNormalization matches torch layer_norm(input + skip + bias)",
          "[kernels]") {
  Attributes a;
  a.Set("epsilon", 1e-5);
  const OpRun r = Run("SkipLayerNormalization", a, ref::skip_layer_norm, 1, "com.microsoft");
  RequireMatches(r, ref::skip_layer_norm, "Y", {"dInput", "dSkip", "dGamma", "dBeta", "dBias"});
  // The sum and the statistics are kept (the registry's input_skip_bias_sum, mean and rstd).
  CHECK(r.forward.extras.at("input_skip_bias_sum").shape() == TensorShape{2, 3, 8});
  CHECK(r.forward.extras.at("mean").shape() == TensorShape{2, 3, 1});
  CHECK(r.forward.extras.at("invstd").shape() == TensorShape{2, 3, 1});
  // skip [S, H] repeats over the batch; its gradient sums the repeats.
  const OpRun repeated =
      Run("SkipLayerNormalization", a, ref::skip_layer_norm_repeated, 1, "com.microsoft");
  RequireMatches(repeated, ref::skip_layer_norm_repeated, "Y", {"dInput", "dSkip", "dGamma"});
}

TEST_CASE("com.microsoft SkipSimplifiedLayerNormalization matches the RMS norm of the sum",
          "[kernels]") {
  Attributes a;
  a.Set("epsilon", 1e-5);
  // skip [1, S, H].
  const OpRun r =
      Run("SkipSimplifiedLayerNormalization", a, ref::skip_rms_norm, 1, "com.microsoft");
  RequireMatches(r, ref::skip_rms_norm, "Y", {"dInput", "dSkip", "dGamma", "dBias"});
  CHECK(r.forward.extras.count("mean") == 0);
  CHECK(r.forward.extras.at("invstd").shape() == TensorShape{2, 3, 1});
}

TEST_CASE("GatherElements matches torch.gather, repeated indices accumulating", "[kernels]") {
  Attributes a;
  a.Set("axis", int64_t{1});
  const TensorShape index_shape{2, 3, 2};
  const OpRun r = Run("GatherElements", a,
                      {T(ref::gather_elements_in0_shape, ref::gather_elements_in0),
                       Tensor::FromValues(index_shape, ref::gather_elements_index, DType::kInt64)},
                      ref::gather_elements_cotangent);
  CHECK(r.forward.outputs[0].shape() == index_shape);
  RequireMatches(r, ref::gather_elements, "Y", {"dX"});
  CHECK_FALSE(r.grads[1].defined());  // indices

  // ONNX also takes negative indices, counted from the end of the axis (3 here): the same.
  std::vector<float> negative = ref::gather_elements_index;
  for (float& i : negative) i -= 3.0f;
  const OpRun wrapped = Run("GatherElements", a,
                            {T(ref::gather_elements_in0_shape, ref::gather_elements_in0),
                             Tensor::FromValues(index_shape, negative, DType::kInt64)},
                            ref::gather_elements_cotangent);
  RequireMatches(wrapped, ref::gather_elements, "Y", {"dX"});
}

TEST_CASE("Mod matches torch.remainder (fmod 0) and torch.fmod (fmod 1)", "[kernels]") {
  const std::vector<Tensor> inputs = Inputs(ref::remainder);
  const OpRun remainder = Run("Mod", Attributes(), inputs, ref::remainder.cotangent);
  RequireMatches(remainder, ref::remainder, "Y", {"dA", "dB"});
  Attributes c_fmod;
  c_fmod.Set("fmod", int64_t{1});
  const OpRun fmod = Run("Mod", c_fmod, ref::fmod);
  RequireMatches(fmod, ref::fmod, "Y", {"dA", "dB"});
  // Integers, as Swin's window masks compute them: -7 mod 3 is 2, fmod(-7, 3) is -1.
  const std::vector<Tensor> ints = {Tensor::FromValues({2}, {-7, 7}, DType::kInt64),
                                    Tensor::FromValues({1}, {3}, DType::kInt64)};
  KernelContext ctx;
  ForwardArgs args;
  args.inputs = ints;
  auto python = RunForward("Mod", ctx, args);
  REQUIRE(python.ok());
  CHECK(python->outputs[0].ToVector() == std::vector<float>{2, 1});
  args.attributes = &c_fmod;
  auto c = RunForward("Mod", ctx, args);
  REQUIRE(c.ok());
  CHECK(c->outputs[0].ToVector() == std::vector<float>{-1, 1});
}

// Range against torch.arange (make_kernel_references.py): int64 positions, an overshooting
// stride, a negative delta, float bounds, an empty range; the output keeps start's dtype.
TEST_CASE("Range matches torch.arange", "[kernels]") {
  KernelContext ctx;
  for (size_t c = 0; c < ref::range_bounds.size(); ++c) {
    const std::vector<float>& b = ref::range_bounds[c];
    const bool integral = b[0] == std::floor(b[0]) && b[2] == std::floor(b[2]);
    const DType dtype = integral ? DType::kInt64 : DType::kFloat32;
    ForwardArgs args;
    for (float v : b) args.inputs.push_back(Tensor::FromValues({}, {v}, dtype));
    INFO("case " << c);
    const ForwardResult run = RequireValue(RunForward("Range", ctx, args));
    CHECK(run.outputs[0].dtype() == dtype);
    CHECK(run.outputs[0].shape() == TensorShape{static_cast<int64_t>(ref::range_out[c].size())});
    RequireClose(run.outputs[0], ref::range_out[c], "Range");
  }
  // ONNX's count max(ceil((limit - start) / delta), 0): a limit behind start is empty (torch
  // raises), and delta 0 is an error.
  ForwardArgs behind;
  for (float v : {3.0f, 1.0f, 1.0f})
    behind.inputs.push_back(Tensor::FromValues({}, {v}, DType::kInt64));
  CHECK(RequireValue(RunForward("Range", ctx, behind)).outputs[0].numel() == 0);
  behind.inputs[2] = Tensor::FromValues({}, {0.0f}, DType::kInt64);
  CHECK(RequireError(RunForward("Range", ctx, behind)) == "Range: delta is 0");
}

// NonZero, by hand: x = [[0, 3, 0], [5, 0, 7]] has non-zeros at (0, 1), (1, 0), (1, 2) in
// row-major order, so the [rank 2, count 3] output is rows [0, 1, 1] and [1, 0, 2]
// (torch.nonzero(x).t()); an all-zero input gives [2, 0].
TEST_CASE("NonZero lists the coordinates of the non-zero elements", "[kernels]") {
  KernelContext ctx;
  ForwardArgs args;
  args.inputs.push_back(Tensor::FromValues({2, 3}, {0, 3, 0, 5, 0, 7}, DType::kFloat32));
  const ForwardResult run = RequireValue(RunForward("NonZero", ctx, args));
  CHECK(run.outputs[0].dtype() == DType::kInt64);
  CHECK(run.outputs[0].shape() == TensorShape{2, 3});
  CHECK(run.outputs[0].ToVector() == std::vector<float>{0, 1, 1, 1, 0, 2});
  args.inputs[0] = Tensor::FromValues({2, 2}, {0, 0, 0, 0}, DType::kInt64);
  CHECK(RequireValue(RunForward("NonZero", ctx, args)).outputs[0].shape() == TensorShape{2, 0});
}

// RotaryEmbedding against the ONNX reference's steps written in torch (make_kernel_references.py),
// dX by autograd; the caches and position ids get no gradient.
TEST_CASE("RotaryEmbedding matches the ONNX reference rotation in torch", "[kernels][rotary]") {
  const Tensor positions = Tensor::FromValues({2, 3}, ref::rotary_positions, DType::kInt64);
  const Tensor cos = T({6, 4}, ref::rotary_cos), sin = T({6, 4}, ref::rotary_sin);
  const Tensor cos_direct = T({2, 3, 2}, ref::rotary_cos_direct);
  const Tensor sin_direct = T({2, 3, 2}, ref::rotary_sin_direct);
  struct Case {
    const char* name;
    const std::vector<int64_t>& shape;
    const std::vector<float>& x;
    const std::vector<float>& cotangent;
    const std::vector<float>& out;
    const std::vector<float>& grad;
    int64_t interleaved, rotary_dim, num_heads;
    bool with_positions;
  };
  const Case cases[] = {
      {"4D, split halves, position ids", ref::rotary_4d_in0_shape, ref::rotary_4d_in0,
       ref::rotary_4d_cotangent, ref::rotary_4d_out, ref::rotary_4d_grad0, 0, 0, 0, true},
      {"3D, interleaved, position ids", ref::rotary_3d_interleaved_in0_shape,
       ref::rotary_3d_interleaved_in0, ref::rotary_3d_interleaved_cotangent,
       ref::rotary_3d_interleaved_out, ref::rotary_3d_interleaved_grad0, 1, 0, 2, true},
      {"4D, interleaved, 4 of 8 dims, per-token caches",
       ref::rotary_4d_partial_interleaved_in0_shape, ref::rotary_4d_partial_interleaved_in0,
       ref::rotary_4d_partial_interleaved_cotangent, ref::rotary_4d_partial_interleaved_out,
       ref::rotary_4d_partial_interleaved_grad0, 1, 4, 0, false},
      {"3D, split halves, 4 of 8 dims, per-token caches", ref::rotary_3d_partial_in0_shape,
       ref::rotary_3d_partial_in0, ref::rotary_3d_partial_cotangent, ref::rotary_3d_partial_out,
       ref::rotary_3d_partial_grad0, 0, 4, 2, false},
  };
  for (const Case& c : cases) {
    INFO(c.name);
    Attributes a;
    a.Set("interleaved", c.interleaved);
    if (c.rotary_dim != 0) a.Set("rotary_embedding_dim", c.rotary_dim);
    if (c.num_heads != 0) a.Set("num_heads", c.num_heads);
    std::vector<Tensor> inputs = {T(c.shape, c.x)};
    if (c.with_positions) {
      inputs.insert(inputs.end(), {cos, sin, positions});
    } else {
      inputs.insert(inputs.end(), {cos_direct, sin_direct});
    }
    const OpRun r = Run("RotaryEmbedding", a, inputs, c.cotangent);
    CHECK(r.forward.outputs[0].shape() == TensorShape(c.shape));
    RequireClose(r.forward.outputs[0], c.out, "Y");
    RequireClose(r.grads[0], c.grad, "dX");
    for (size_t i = 1; i < r.grads.size(); ++i) CHECK_FALSE(r.grads[i].defined());
    // With position ids forward keeps the gathered rows the registry saves, [2, 3, 4] each.
    CHECK(r.forward.extras.size() == (c.with_positions ? 2u : 0u));
    if (c.with_positions)
      CHECK(r.forward.extras.at("gathered_cos").shape() == TensorShape{2, 3, 4});
  }
}

// com.microsoft RotaryEmbedding against ORT's CPU kernel's rotation written the rotate-half way in
// torch (make_kernel_references.py, ms_rotary): position ids [B, S] or one offset, heads from
// num_heads or twice the caches' width, dX by autograd.
TEST_CASE("com.microsoft RotaryEmbedding matches ONNX Runtime's rotation in torch",
          "[kernels][rotary]") {
  const Tensor positions = Tensor::FromValues({2, 3}, ref::ms_rotary_positions, DType::kInt64);
  const Tensor cos = T({6, 4}, ref::rotary_cos), sin = T({6, 4}, ref::rotary_sin);
  const Tensor cos_partial = T({6, 2}, ref::ms_rotary_cos_partial);
  const Tensor sin_partial = T({6, 2}, ref::ms_rotary_sin_partial);
  const Tensor offset2 = Tensor::FromValues({1}, {2}, DType::kInt64);
  const Tensor offset3 = Tensor::FromValues({}, {3}, DType::kInt64);
  const Tensor offset1 = Tensor::FromValues({1}, {1}, DType::kInt64);
  struct Case {
    const char* name;
    const ref::GradCase& reference;
    const Tensor& positions;
    bool partial;  // rotary_embedding_dim 4 with the [6, 2] caches
    int64_t interleaved, num_heads;
    TensorShape gathered;  // the rows forward keeps for backward
  };
  const Case cases[] = {
      {"4D, split halves, position ids [B, S]",
       ref::ms_rotary_4d,
       positions,
       false,
       0,
       0,
       {2, 3, 4}},
      {"3D, num_heads, interleaved, offset [2]",
       ref::ms_rotary_3d_offset,
       offset2,
       false,
       1,
       2,
       {1, 3, 4}},
      {"3D, heads of twice the caches' width, scalar offset 3",
       ref::ms_rotary_3d_derived,
       offset3,
       false,
       0,
       0,
       {1, 3, 4}},
      {"4D, interleaved, 4 of 8 dims, position ids [B, S]",
       ref::ms_rotary_4d_partial_interleaved,
       positions,
       true,
       1,
       2,
       {2, 3, 2}},
      {"3D, split halves, 4 of 8 dims, offset [1]",
       ref::ms_rotary_3d_partial_offset,
       offset1,
       true,
       0,
       2,
       {1, 3, 2}},
  };
  for (const Case& c : cases) {
    INFO(c.name);
    Attributes a;
    a.Set("interleaved", c.interleaved);
    if (c.partial) a.Set("rotary_embedding_dim", int64_t{4});
    if (c.num_heads != 0) a.Set("num_heads", c.num_heads);
    const Tensor x = T(c.reference.inputs[0].shape, c.reference.inputs[0].values);
    const std::vector<Tensor> inputs = {x, c.positions, c.partial ? cos_partial : cos,
                                        c.partial ? sin_partial : sin};
    const OpRun r = Run("RotaryEmbedding", a, inputs, c.reference.cotangent, 1, "com.microsoft");
    CHECK(r.forward.outputs[0].shape() == x.shape());
    RequireClose(r.forward.outputs[0], c.reference.out, "Y");
    RequireClose(r.grads[0], c.reference.grads[0], "dX");
    for (size_t i = 1; i < r.grads.size(); ++i) CHECK_FALSE(r.grads[i].defined());
    // The rows the registry saves: position_ids.shape + [rot/2], [1, S, rot/2] for an offset.
    CHECK(r.forward.extras.at("gathered_cos").shape() == c.gathered);
  }
}

}  // namespace
}  // namespace memplan::testing
