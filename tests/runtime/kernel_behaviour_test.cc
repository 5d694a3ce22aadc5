// Kernel behaviour beyond gradients: the registry's coverage, fp16 emulation inside kernels,
// views, Dropout's seeded mask, Slice's ONNX clamping, error messages, and a check that the
// gradient checker itself rejects a wrong gradient.

#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <limits>
#include <string>
#include <string_view>
#include <vector>

#include "runtime/cpu/kernel_registry.h"
#include "runtime/precision_emulation.h"
#include "tests/require_value.h"
#include "tests/runtime/gradient_check.h"

namespace memplan::testing {
namespace {

Tensor Forward1(const std::string& op, std::vector<Tensor> inputs, const Attributes& attrs = {},
                const KernelContext& ctx = {}) {
  ForwardArgs args;
  args.attributes = &attrs;
  args.inputs = std::move(inputs);
  auto result = RunForward(op, ctx, args);
  if (!result.ok()) FAIL(result.error().message);
  return result->outputs.at(0);
}

TEST_CASE("every op of the model zoo has a forward and a backward kernel", "[kernels]") {
  for (const char* op : {"Conv",
                         "BatchNormalization",
                         "LayerNormalization",
                         "Relu",
                         "Gelu",
                         "Erf",
                         "Sigmoid",
                         "Tanh",
                         "MaxPool",
                         "AveragePool",
                         "GlobalAveragePool",
                         "Gemm",
                         "MatMul",
                         "Add",
                         "Sub",
                         "Mul",
                         "Div",
                         "Pow",
                         "Sqrt",
                         "Neg",
                         "Exp",
                         "Log",
                         "Reciprocal",
                         "Softmax",
                         "LogSoftmax",
                         "ReduceMean",
                         "ReduceSum",
                         "Gather",
                         "Reshape",
                         "Flatten",
                         "Squeeze",
                         "Unsqueeze",
                         "Transpose",
                         "Expand",
                         "Concat",
                         "Split",
                         "Slice",
                         "Where",
                         "Dropout",
                         "Cast",
                         "Identity"}) {
    INFO(op);
    const KernelEntry* entry = KernelRegistry::Get().Find(op);
    REQUIRE(entry != nullptr);
    CHECK(entry->forward != nullptr);
    CHECK(entry->backward != nullptr);
  }
  auto missing = RunForward("NoSuchOp", KernelContext(), ForwardArgs());
  REQUIRE_FALSE(missing.ok());
  CHECK(missing.error().message == "no CPU kernel for op type 'NoSuchOp'");
}

TEST_CASE("the gradient check rejects a wrong backward", "[gradcheck]") {
  // Relu's backward replaced by the identity: wrong wherever x < 0, so the check must fail.
  GradCheckCase c;
  c.op = "Relu";
  c.inputs = {RandomAwayFromZero({3, 5}, 1, 0.1f, 2.0f)};
  c.checked_inputs = {0};
  c.backward_override = [](const KernelContext& ctx, const BackwardArgs& args) {
    return RunBackward("Identity", ctx, args);
  };
  CHECK(CheckGradients(c).worst_ratio > 10.0);
}

TEST_CASE("fp16 tensors: kernels compute in fp32 and round their results", "[kernels]") {
  SECTION("Add rounds to fp16: 1 + 2^-11 ties to even, back to 1") {
    const Tensor a = Tensor::FromValues({1}, {1.0f}, DType::kFloat16);
    const Tensor b = Tensor::FromValues({1}, {0.00048828125f}, DType::kFloat16);  // 2^-11
    const Tensor y = Forward1("Add", {a, b});
    CHECK(y.dtype() == DType::kFloat16);
    CHECK(y.data()[0] == 1.0f);
  }
  SECTION("MatMul accumulates in fp32: 2048 + 1 + 1 = 2050, not fp16's 2048") {
    // Summed in fp16, 2048 + 1 rounds back to 2048 twice; fp32 accumulation keeps 2050, which
    // fp16 represents (its spacing at 2048 is 2).
    const Tensor a = Tensor::FromValues({1, 3}, {2048.0f, 1.0f, 1.0f}, DType::kFloat16);
    const Tensor b = Tensor::FromValues({3, 1}, {1.0f, 1.0f, 1.0f}, DType::kFloat16);
    CHECK(Forward1("MatMul", {a, b}).data()[0] == 2050.0f);
  }
  SECTION("Cast to fp16 rounds and overflows; its backward returns fp32") {
    Attributes to_half;
    to_half.Set("to", int64_t{10});  // TensorProto.FLOAT16
    const Tensor x = Tensor::FromValues({3}, {0.1f, 70000.0f, -1.0f});
    const Tensor y = Forward1("Cast", {x}, to_half);
    CHECK(y.dtype() == DType::kFloat16);
    CHECK(y.data()[0] == 0.0999755859375f);  // fp16 0x2E66
    CHECK(std::isinf(y.data()[1]));
    CHECK(y.data()[2] == -1.0f);
    BackwardArgs args;
    args.attributes = &to_half;
    args.input_shapes = {{3}};
    args.input_dtypes = {DType::kFloat32};
    args.grad_outputs = {Tensor::FromValues({3}, {0.5f, 0.25f, 3.0f}, DType::kFloat16)};
    auto grads = RunBackward("Cast", KernelContext(), args);
    REQUIRE(grads.ok());
    CHECK((*grads)[0].dtype() == DType::kFloat32);
    CHECK((*grads)[0].ToVector() == std::vector<float>{0.5f, 0.25f, 3.0f});
  }
}

TEST_CASE("view ops share the input's storage and allocate nothing", "[kernels]") {
  CountingCpuAllocator allocator;
  {
    KernelContext ctx;
    ctx.allocator = &allocator;
    const Tensor x =
        Tensor::Zeros({2, 3, 4}, DType::kFloat32, allocator, MemoryCategory::kActivations);
    const int64_t before = allocator.num_allocations();
    const Tensor y = Forward1("Reshape", {x, IntTensor({2}, {4, -1})}, {}, ctx);
    CHECK(y.shape() == TensorShape{4, 6});
    CHECK(y.SharesStorageWith(x));
    const Tensor z = Forward1("Flatten", {x}, {}, ctx);
    CHECK(z.shape() == TensorShape{2, 12});
    CHECK(allocator.num_allocations() == before);
    // Transpose copies: one new buffer in the output category.
    Attributes perm;
    perm.Set("perm", std::vector<int64_t>{2, 0, 1});
    const Tensor t = Forward1("Transpose", {x}, perm, ctx);
    CHECK(t.shape() == TensorShape{4, 2, 3});
    CHECK(allocator.live_bytes()[MemoryCategory::kTransients] == 24 * 4);
  }
  CHECK(allocator.live_total() == 0);
}

TEST_CASE("Slice follows ONNX clamping for INT64_MAX ends and negative steps", "[kernels]") {
  const Tensor x = Tensor::FromValues({6}, {0, 1, 2, 3, 4, 5});
  // starts = 1, ends = INT64_MAX: everything from 1 ("to the end" in exported models).
  const Tensor to_end = Tensor::FromValues({1}, {9.2233720368547758e18f}, DType::kInt64);
  CHECK(Forward1("Slice", {x, IntTensor({1}, {1}), to_end}).ToVector() ==
        std::vector<float>{1, 2, 3, 4, 5});
  // starts = -1, ends = -7 (clamped to -1: before the first), step -2: 5, 3, 1.
  CHECK(Forward1("Slice", {x, IntTensor({1}, {-1}), IntTensor({1}, {-7}), IntTensor({1}, {0}),
                           IntTensor({1}, {-2})})
            .ToVector() == std::vector<float>{5, 3, 1});
}

TEST_CASE("Dropout draws a seeded mask and scales the kept values", "[kernels]") {
  const Tensor x = Tensor::FromValues({1000}, std::vector<float>(1000, 1.0f));
  ForwardArgs args;
  args.inputs = {x, Tensor::FromValues({}, {0.25f})};
  KernelContext ctx;
  ctx.seed = 42;
  auto first = RunForward("Dropout", ctx, args);
  auto again = RunForward("Dropout", ctx, args);
  REQUIRE(first.ok());
  REQUIRE(again.ok());
  const Tensor& y = first->outputs[0];
  int kept = 0;
  for (int64_t i = 0; i < y.numel(); ++i) {
    // Kept values are scaled by 1 / (1 - 0.25); dropped ones are 0.
    CHECK((y.data()[i] == 0.0f || y.data()[i] == Approx(4.0f / 3.0f)));
    kept += y.data()[i] != 0.0f ? 1 : 0;
  }
  // 750 expected; a binomial(1000, 0.75) is within +-5 sigma (sigma ~ 13.7) of it.
  CHECK(kept > 680);
  CHECK(kept < 820);
  CHECK(first->extras.at("mask").dtype() == DType::kBool);
  CHECK(y.ToVector() == again->outputs[0].ToVector());  // same seed, same mask (recompute)
  ctx.seed = 43;
  auto other = RunForward("Dropout", ctx, args);
  REQUIRE(other.ok());
  CHECK(y.ToVector() != other->outputs[0].ToVector());
  ctx.training = false;
  auto eval = RunForward("Dropout", ctx, args);
  REQUIRE(eval.ok());
  CHECK(eval->outputs[0].ToVector() == x.ToVector());
}

// F.dropout(x, p=0.0, training=True) (HF attention's dropout at attention_dropout 0, exported with
// --fusions none): ATen's dropout returns the input and keeps no mask, as the registry plans it, so
// backward gets no extras and passes the gradient through.
TEST_CASE("Dropout with p = 0 backs through without a mask", "[kernels]") {
  BackwardArgs args;
  const Tensor ratio = Tensor::FromValues({}, {0.0f});
  args.inputs = {Tensor::FromValues({3}, {1.0f, 2.0f, 3.0f}), ratio};
  args.input_shapes = {{3}, {}};
  args.input_dtypes = {DType::kFloat32, DType::kFloat32};
  args.grad_outputs = {Tensor::FromValues({3}, {0.5f, -1.0f, 2.0f})};
  args.needs_input_grad = {true, false};
  KernelContext ctx;
  ctx.training = true;
  auto grads = RunBackward("Dropout", ctx, args);
  REQUIRE(grads.ok());
  CHECK(grads->at(0).ToVector() == std::vector<float>{0.5f, -1.0f, 2.0f});
}

TEST_CASE("Bernoulli draws 0 or 1 with each element's probability, seeded", "[kernels]") {
  // Probabilities 0 and 1 first (always 0, always 1), then 1000 of 0.3.
  std::vector<float> p = {0.0f, 1.0f};
  p.resize(1002, 0.3f);
  ForwardArgs args;
  args.inputs = {Tensor::FromValues({1002}, p)};
  Attributes attrs;
  attrs.Set("dtype", int64_t{9});  // ONNX BOOL
  args.attributes = &attrs;
  KernelContext ctx;
  ctx.seed = 7;
  auto first = RunForward("Bernoulli", ctx, args);
  REQUIRE(first.ok());
  const Tensor& y = first->outputs[0];
  CHECK(y.dtype() == DType::kBool);
  CHECK(y.data()[0] == 0.0f);
  CHECK(y.data()[1] == 1.0f);
  int ones = 0;
  for (int64_t i = 2; i < y.numel(); ++i) {
    CHECK((y.data()[i] == 0.0f || y.data()[i] == 1.0f));
    ones += y.data()[i] == 1.0f ? 1 : 0;
  }
  // 300 expected; binomial(1000, 0.3) has sigma ~ 14.5: within +-5 sigma.
  CHECK(ones > 227);
  CHECK(ones < 373);
  auto again = RunForward("Bernoulli", ctx, args);
  REQUIRE(again.ok());
  CHECK(again->outputs[0].ToVector() == y.ToVector());  // same seed, same draws (recompute)
  ctx.seed = 8;
  auto other = RunForward("Bernoulli", ctx, args);
  REQUIRE(other.ok());
  CHECK(other->outputs[0].ToVector() != y.ToVector());
  // Draws off (verify's accumulation check): 1 wherever p > 0.
  ctx.training = false;
  auto off = RunForward("Bernoulli", ctx, args);
  REQUIRE(off.ok());
  std::vector<float> expected(1002, 1.0f);
  expected[0] = 0.0f;
  CHECK(off->outputs[0].ToVector() == expected);
  // A probability outside [0, 1] is an error naming it.
  args.inputs = {Tensor::FromValues({1}, {1.5f})};
  auto bad = RunForward("Bernoulli", ctx, args);
  REQUIRE_FALSE(bad.ok());
  CHECK(bad.error().message == "Bernoulli: probability 1.500000 is outside [0, 1]");
}

TEST_CASE("RandomUniformLike and RandomNormalLike draw seeded values of the input's shape",
          "[kernels]") {
  ForwardArgs args;
  args.inputs = {Tensor::FromValues({4000}, std::vector<float>(4000, 0.0f))};
  Attributes uniform;
  uniform.Set("low", 2.0);
  uniform.Set("high", 4.0);
  args.attributes = &uniform;
  KernelContext ctx;
  ctx.seed = 11;
  auto u = RunForward("RandomUniformLike", ctx, args);
  REQUIRE(u.ok());
  double sum = 0.0;
  for (float v : u->outputs[0].ToVector()) {
    CHECK((v >= 2.0f && v < 4.0f));
    sum += v;
  }
  // Mean 3, sigma of the mean 2 / sqrt(12 * 4000) = 0.0091: within 5 sigma.
  CHECK(std::abs(sum / 4000 - 3.0) < 0.046);
  auto again = RunForward("RandomUniformLike", ctx, args);
  REQUIRE(again.ok());
  CHECK(again->outputs[0].ToVector() == u->outputs[0].ToVector());

  Attributes normal;
  normal.Set("mean", 1.0);
  normal.Set("scale", 0.5);
  args.attributes = &normal;
  auto n = RunForward("RandomNormalLike", ctx, args);
  REQUIRE(n.ok());
  double s1 = 0.0, s2 = 0.0;
  for (float v : n->outputs[0].ToVector()) {
    s1 += v;
    s2 += static_cast<double>(v) * v;
  }
  const double mean = s1 / 4000, variance = s2 / 4000 - mean * mean;
  // Mean 1 (sigma of the mean 0.5 / sqrt(4000) = 0.0079), variance 0.25 (sigma ~ 0.0056).
  CHECK(std::abs(mean - 1.0) < 0.04);
  CHECK(std::abs(variance - 0.25) < 0.028);
  // Draws off (verify's accumulation check): the mean everywhere.
  ctx.training = false;
  auto off = RunForward("RandomNormalLike", ctx, args);
  REQUIRE(off.ok());
  CHECK(off->outputs[0].ToVector() == std::vector<float>(4000, 1.0f));
}

TEST_CASE("MaxPool keeps the first maximum and the first NaN of a window", "[kernels]") {
  // One 2x4 plane, 2x2 windows with stride 2: window 0 holds 5 twice (flat indices 1 and 4),
  // window 1 holds NaN at 3 and 6 and a larger 9 at 2.
  const float nan = std::numeric_limits<float>::quiet_NaN();
  const Tensor x = Tensor::FromValues({1, 1, 2, 4}, {2, 5, 9, nan, 5, 1, nan, 0});
  Attributes attrs;
  attrs.Set("kernel_shape", std::vector<int64_t>{2, 2});
  attrs.Set("strides", std::vector<int64_t>{2, 2});
  ForwardArgs args;
  args.attributes = &attrs;
  args.inputs = {x};
  args.num_outputs = 2;
  auto result = RunForward("MaxPool", KernelContext(), args);
  REQUIRE(result.ok());
  const std::vector<float> y = result->outputs.at(0).ToVector();
  REQUIRE(y.size() == 2);
  CHECK(y[0] == 5.0f);
  CHECK(std::isnan(y[1]));
  // PyTorch's indices: the first maximum (1, not 4) and the first NaN (3, not 6).
  CHECK(result->outputs.at(1).ToVector() == std::vector<float>{1, 3});
}

TEST_CASE("Conv taps that read only padding contribute zero", "[kernels]") {
  // X = [[2]] (one pixel), W = [1 2 3 4 5] (a 1x5 kernel), 4 columns of padding on the left
  // only: the output is one pixel and only the last tap (w = 5) reads the input: y = 2 * 5.
  // Taps 0-3 land wholly in the padding, their column rows start past the output's end.
  Attributes attrs;
  attrs.Set("pads", std::vector<int64_t>{0, 4, 0, 0});
  const Tensor x = Tensor::FromValues({1, 1, 1, 1}, {2});
  const Tensor w = Tensor::FromValues({1, 1, 1, 5}, {1, 2, 3, 4, 5});
  CHECK(Forward1("Conv", {x, w}, attrs).ToVector() == std::vector<float>{10});
  BackwardArgs args;
  args.attributes = &attrs;
  args.inputs = {x, w};
  args.input_shapes = {x.shape(), w.shape()};
  args.input_dtypes = {DType::kFloat32, DType::kFloat32};
  args.grad_outputs = {Tensor::FromValues({1, 1, 1, 1}, {1})};
  auto grads = RunBackward("Conv", KernelContext(), args);
  REQUIRE(grads.ok());
  CHECK((*grads)[0].ToVector() == std::vector<float>{5});              // dX = w[4]
  CHECK((*grads)[1].ToVector() == std::vector<float>{0, 0, 0, 0, 2});  // dW[4] = x
}

TEST_CASE("kernels report bad shapes as errors naming the op", "[kernels]") {
  ForwardArgs args;
  args.inputs = {Tensor::FromValues({2, 3}, std::vector<float>(6)),
                 Tensor::FromValues({4, 2}, std::vector<float>(8))};
  auto matmul = RunForward("MatMul", KernelContext(), args);
  REQUIRE_FALSE(matmul.ok());
  CHECK(matmul.error().message == "MatMul: inner dims differ: [2, 3] x [4, 2]");
  auto add = RunForward("Add", KernelContext(), args);
  REQUIRE_FALSE(add.ok());
  CHECK(add.error().message == "Add: shapes [2, 3] and [4, 2] do not broadcast");
  BackwardArgs missing;
  missing.grad_outputs = {Tensor::FromValues({2}, {1, 1})};
  missing.input_shapes = {{2}};
  missing.input_dtypes = {DType::kFloat32};
  auto relu = RunBackward("Relu", KernelContext(), missing);
  REQUIRE_FALSE(relu.ok());
  CHECK(relu.error().message == "Relu: saved output 0 is missing");
}

// RotaryEmbedding on X [2, 2 heads, 3, 4] (4D) with caches [5, 2] and position ids.
struct RotaryCase {
  Attributes attributes;
  std::vector<Tensor> inputs;  // X, cos_cache, sin_cache, position_ids
};

// Caches of true rotations: cos and sin of random angles.
RotaryCase RotaryWithPositions(const Tensor& positions) {
  const Tensor angles = RandomTensor({5, 2}, 32, -3.0f, 3.0f);
  Tensor cos = Tensor::FromValues({5, 2}, std::vector<float>(10));
  Tensor sin = Tensor::FromValues({5, 2}, std::vector<float>(10));
  for (int64_t i = 0; i < angles.numel(); ++i) {
    cos.mutable_data()[i] = std::cos(angles.data()[i]);
    sin.mutable_data()[i] = std::sin(angles.data()[i]);
  }
  RotaryCase c;
  c.inputs = {RandomTensor({2, 2, 3, 4}, 31), cos, sin, positions};
  return c;
}

// RotaryEmbedding of `domain` ("" for ai.onnx, "com.microsoft") forward on `inputs`.
Expected<ForwardResult> RotaryForward(std::string_view domain, const Attributes& attrs,
                                      std::vector<Tensor> inputs) {
  ForwardArgs args;
  args.attributes = &attrs;
  args.inputs = std::move(inputs);
  return RunForward("RotaryEmbedding", KernelContext(), args, domain);
}

// RotaryEmbedding of `domain` backward for the first input's gradient alone, from `given` (what
// the caller hands back of the inputs) and `forward`'s extras, with the shapes and dtypes of
// `inputs`.
Expected<InputGradients> RotaryBackward(std::string_view domain, const Attributes& attrs,
                                        const std::vector<Tensor>& inputs,
                                        std::vector<Tensor> given, const ForwardResult& forward,
                                        const Tensor& dy) {
  BackwardArgs args;
  args.attributes = &attrs;
  args.inputs = std::move(given);
  args.extras = forward.extras;
  for (const Tensor& t : inputs) {
    args.input_shapes.push_back(t.shape());
    args.input_dtypes.push_back(t.dtype());
  }
  args.grad_outputs = {dy};
  args.needs_input_grad = {true, false, false, false};
  args.needs_input_grad.resize(inputs.size());
  return RunBackward("RotaryEmbedding", KernelContext(), args, domain);
}

// The ai.onnx op on a RotaryCase.
Expected<ForwardResult> RotaryForward(const RotaryCase& c) {
  return RotaryForward("", c.attributes, c.inputs);
}
Expected<InputGradients> RotaryBackward(const RotaryCase& c, const ForwardResult& forward,
                                        std::vector<Tensor> given, const Tensor& dy) {
  return RotaryBackward("", c.attributes, c.inputs, std::move(given), forward, dy);
}

TEST_CASE("RotaryEmbedding's backward reads only the cos and sin the registry saves",
          "[kernels][rotary]") {
  const Tensor positions = IntTensor({2, 3}, {0, 4, 2, 3, 3, 1});
  RotaryCase c = RotaryWithPositions(positions);
  auto forward = RotaryForward(c);
  REQUIRE(forward.ok());
  const Tensor dy = RandomTensor({2, 2, 3, 4}, 34);
  auto all = RotaryBackward(c, *forward, c.inputs, dy);
  REQUIRE(all.ok());
  // The registry saves gathered_cos and gathered_sin (graph/ops/attention_ops.cc), not X, the
  // caches or the position ids: the same gradient from the extras alone.
  auto saved = RotaryBackward(c, *forward, std::vector<Tensor>(4), dy);
  REQUIRE(saved.ok());
  CHECK((*saved)[0].ToVector() == (*all)[0].ToVector());
  // A rotation keeps each pair's length, and so does its adjoint: |dX| = |dY|.
  double dy_norm = 0.0, dx_norm = 0.0;
  for (int64_t i = 0; i < dy.numel(); ++i) {
    dy_norm += static_cast<double>(dy.data()[i]) * dy.data()[i];
    dx_norm += static_cast<double>((*saved)[0].data()[i]) * (*saved)[0].data()[i];
  }
  CHECK(dx_norm == Approx(dy_norm).epsilon(1e-6));

  // Without position ids the caches are per token and saved as they are.
  RotaryCase direct;
  direct.inputs = {c.inputs[0], forward->extras.at("gathered_cos"),
                   forward->extras.at("gathered_sin")};
  auto direct_forward = RotaryForward(direct);
  REQUIRE(direct_forward.ok());
  CHECK(direct_forward->extras.empty());
  CHECK(direct_forward->outputs[0].ToVector() == forward->outputs[0].ToVector());
  auto direct_saved =
      RotaryBackward(direct, *direct_forward, {Tensor(), direct.inputs[1], direct.inputs[2]}, dy);
  REQUIRE(direct_saved.ok());
  CHECK((*direct_saved)[0].ToVector() == (*all)[0].ToVector());
}

TEST_CASE(
    "RotaryEmbedding broadcasts one row of position ids over the batch, gradients by differences",
    "[kernels][rotary][gradcheck]") {
  // 3D X [2, 3, 2 heads * 6], interleaved, 4 of each head's 6 dims rotated.
  GradCheckCase c;
  c.op = "RotaryEmbedding";
  c.attributes.Set("num_heads", int64_t{2});
  c.attributes.Set("interleaved", int64_t{1});
  c.attributes.Set("rotary_embedding_dim", int64_t{4});
  const Tensor x = RandomTensor({2, 3, 12}, 41);
  const Tensor cos = RandomTensor({4, 2}, 42), sin = RandomTensor({4, 2}, 43);
  c.inputs = {x, cos, sin, IntTensor({1, 3}, {3, 0, 2})};
  c.checked_inputs = {0};
  const Tensor repeated = Forward1(
      "RotaryEmbedding", {x, cos, sin, IntTensor({2, 3}, {3, 0, 2, 3, 0, 2})}, c.attributes);
  CHECK(Forward1("RotaryEmbedding", c.inputs, c.attributes).ToVector() == repeated.ToVector());
  // Each head's last 2 dims pass through.
  for (int64_t e = 0; e < x.numel(); ++e)
    if (e % 6 >= 4) CHECK(repeated.data()[e] == x.data()[e]);
  MEMPLAN_REQUIRE_GRADIENTS_MATCH(c);
}

TEST_CASE("RotaryEmbedding reports inputs its spec rejects", "[kernels][rotary]") {
  const Tensor cos = RandomTensor({5, 2}, 51), sin = RandomTensor({5, 2}, 52);
  const Tensor positions = IntTensor({2, 3}, {0, 1, 2, 0, 1, 2});
  auto error = [](const std::vector<Tensor>& inputs, const Attributes& attrs) {
    return RequireError(RotaryForward("", attrs, inputs));
  };
  CHECK(error({RandomTensor({2, 3, 8}, 53), cos, sin, positions}, Attributes()) ==
        "RotaryEmbedding: a 3D input [2, 3, 8] needs num_heads dividing its hidden size "
        "(num_heads = 0)");
  Attributes odd;
  odd.Set("rotary_embedding_dim", int64_t{3});
  CHECK(error({RandomTensor({2, 2, 3, 4}, 54), cos, sin, positions}, odd) ==
        "RotaryEmbedding: rotary_embedding_dim 3 is not an even size of at most the head size 4");
  CHECK(error({RandomTensor({2, 2, 3, 4}, 55), cos, sin, IntTensor({2, 3}, {0, 1, 5, 0, 1, 2})},
              Attributes()) == "RotaryEmbedding: position id 5 is outside the caches' 5 positions");
  // Head size 6 rotates 3 pairs; a cache row of 2 is too short.
  CHECK(error({RandomTensor({2, 2, 3, 6}, 56), cos, sin, positions}, Attributes()) ==
        "RotaryEmbedding: per-token cos/sin [2, 3, 2] do not fit [2, 3, 3]");
}

// com.microsoft RotaryEmbedding (input, position_ids, cos_cache, sin_cache) on RotaryWithPositions'
// data: X [2, 2 heads, 3, 4] and caches [5, 2], so its head size (twice the caches' width) is X's.
std::vector<Tensor> MicrosoftOrder(const RotaryCase& c, const Tensor& positions) {
  return {c.inputs[0], positions, c.inputs[1], c.inputs[2]};
}

Expected<ForwardResult> MicrosoftForward(const std::vector<Tensor>& inputs,
                                         const Attributes& attrs = {}) {
  return RotaryForward("com.microsoft", attrs, inputs);
}

// Backward given only `forward`'s extras and the inputs' shapes, as the registry saves: neither X,
// the caches nor the position ids.
Expected<InputGradients> MicrosoftBackwardFromSaved(const std::vector<Tensor>& inputs,
                                                    const ForwardResult& forward,
                                                    const Tensor& dy) {
  const Attributes none;
  return RotaryBackward("com.microsoft", none, inputs, std::vector<Tensor>(inputs.size()), forward,
                        dy);
}

TEST_CASE("com.microsoft RotaryEmbedding is the ai.onnx op with its inputs reordered",
          "[kernels][rotary]") {
  const Tensor positions = IntTensor({2, 3}, {0, 4, 2, 3, 3, 1});
  const RotaryCase c = RotaryWithPositions(positions);
  auto onnx = RotaryForward(c);
  REQUIRE(onnx.ok());
  const Tensor dy = RandomTensor({2, 2, 3, 4}, 35);
  auto onnx_grads = RotaryBackward(c, *onnx, c.inputs, dy);
  REQUIRE(onnx_grads.ok());

  const std::vector<Tensor> ms_inputs = MicrosoftOrder(c, positions);
  auto ms = MicrosoftForward(ms_inputs);
  REQUIRE(ms.ok());
  CHECK(ms->outputs[0].ToVector() == onnx->outputs[0].ToVector());
  CHECK(ms->extras.at("gathered_cos").ToVector() == onnx->extras.at("gathered_cos").ToVector());
  // `scale` would scale caches the op computes itself; with given caches ORT does not apply it.
  Attributes scaled;
  scaled.Set("scale", 2.0);
  auto ms_scaled = MicrosoftForward(ms_inputs, scaled);
  REQUIRE(ms_scaled.ok());
  CHECK(ms_scaled->outputs[0].ToVector() == onnx->outputs[0].ToVector());
  auto ms_grads = MicrosoftBackwardFromSaved(ms_inputs, *ms, dy);
  REQUIRE(ms_grads.ok());
  CHECK((*ms_grads)[0].ToVector() == (*onnx_grads)[0].ToVector());

  // One offset is ai.onnx's position ids offset + s, one row shared by the batch; backward
  // reads the [1, S, rot/2] rows forward kept.
  const std::vector<Tensor> offset_inputs = MicrosoftOrder(c, IntTensor({1}, {1}));
  auto offset = MicrosoftForward(offset_inputs);
  REQUIRE(offset.ok());
  CHECK(offset->extras.at("gathered_sin").shape() == TensorShape{1, 3, 2});
  RotaryCase by_row = c;
  by_row.inputs[3] = IntTensor({1, 3}, {1, 2, 3});
  auto onnx_row = RotaryForward(by_row);
  REQUIRE(onnx_row.ok());
  CHECK(offset->outputs[0].ToVector() == onnx_row->outputs[0].ToVector());
  auto offset_grads = MicrosoftBackwardFromSaved(offset_inputs, *offset, dy);
  REQUIRE(offset_grads.ok());
  auto onnx_row_grads = RotaryBackward(by_row, *onnx_row, std::vector<Tensor>(4), dy);
  REQUIRE(onnx_row_grads.ok());
  CHECK((*offset_grads)[0].ToVector() == (*onnx_row_grads)[0].ToVector());
}

TEST_CASE("com.microsoft RotaryEmbedding with one offset, gradients by differences",
          "[kernels][rotary][gradcheck]") {
  // 3D X [2, 3, 3 heads * 4] without num_heads: heads of twice the caches' width; interleaved.
  GradCheckCase c;
  c.op = "RotaryEmbedding";
  c.domain = "com.microsoft";
  c.attributes.Set("interleaved", int64_t{1});
  c.inputs = {RandomTensor({2, 3, 12}, 44), IntTensor({}, {2}), RandomTensor({5, 2}, 45),
              RandomTensor({5, 2}, 46)};
  c.checked_inputs = {0};
  MEMPLAN_REQUIRE_GRADIENTS_MATCH(c);
}

TEST_CASE("com.microsoft RotaryEmbedding reports what ONNX Runtime rejects or it does not run",
          "[kernels][rotary]") {
  const Tensor x = RandomTensor({2, 2, 3, 4}, 61);
  const Tensor cos = RandomTensor({5, 2}, 62), sin = RandomTensor({5, 2}, 63);
  const Tensor positions = IntTensor({2, 3}, {0, 1, 2, 0, 1, 2});
  auto error = [](const std::vector<Tensor>& inputs, const Attributes& attrs) {
    return RequireError(MicrosoftForward(inputs, attrs));
  };
  Attributes packed;
  packed.Set("is_packed_batching", int64_t{1});
  CHECK(error({x, positions, cos, sin}, packed) ==
        "com.microsoft RotaryEmbedding: is_packed_batching (ragged batches) is not supported");
  Attributes partial;
  partial.Set("rotary_embedding_dim", int64_t{2});
  CHECK(error({x, positions, cos, sin}, partial) ==
        "com.microsoft RotaryEmbedding: rotary_embedding_dim 2 needs a positive num_heads, not 0");
  // ORT steps through the cache rows by rot/2: a row wider than that is not read as one.
  partial.Set("num_heads", int64_t{2});
  CHECK(error({x, positions, cos, sin}, partial) ==
        "com.microsoft RotaryEmbedding: the caches' width 2 is not rotary_embedding_dim / 2 = 1");
  Attributes three_heads;
  three_heads.Set("num_heads", int64_t{3});
  CHECK(error({x, positions, cos, sin}, three_heads) ==
        "com.microsoft RotaryEmbedding: num_heads 3 is not the 2 heads of the 4D input "
        "[2, 2, 3, 4]");
  CHECK(error({RandomTensor({2, 2, 3, 6}, 64), positions, cos, sin}, Attributes()) ==
        "com.microsoft RotaryEmbedding: the caches' width 2 is not half the head size 6");
  CHECK(error({RandomTensor({2, 3, 10}, 65), positions, cos, sin}, Attributes()) ==
        "com.microsoft RotaryEmbedding: a 3D input [2, 3, 10] is not 2 heads of size 4 (twice "
        "the caches' width)");
  // Position ids are [B, S] exactly (no batch broadcast, unlike ai.onnx) or one offset whose
  // tokens all fit the caches.
  CHECK(error({x, IntTensor({1, 3}, {0, 1, 2}), cos, sin}, Attributes()) ==
        "com.microsoft RotaryEmbedding: position_ids [1, 3] are not [batch, seq] = [2, 3] or one "
        "offset");
  CHECK(error({x, IntTensor({1}, {3}), cos, sin}, Attributes()) ==
        "com.microsoft RotaryEmbedding: position id 5 is outside the caches' 5 positions");
}

// What a com.microsoft contrib kernel computes: its forward, and its backward given `dy` and
// only the forward tensors the registry saves (the inputs in `saved_inputs`, the outputs in
// `saved_outputs`, the extras) or everything (both null).
struct ContribRun {
  ForwardResult forward;
  InputGradients saved_only, everything;
};

ContribRun RunContrib(const std::string& op, const std::vector<Tensor>& inputs,
                      const Attributes& attrs, int num_outputs, const Tensor& dy,
                      const std::vector<size_t>& saved_inputs,
                      const std::vector<size_t>& saved_outputs) {
  ForwardArgs fargs;
  fargs.attributes = &attrs;
  fargs.inputs = inputs;
  fargs.num_outputs = num_outputs;
  auto forward = RunForward(op, KernelContext(), fargs, "com.microsoft");
  if (!forward.ok()) FAIL(forward.error().message);
  auto backward = [&](bool only_saved) {
    BackwardArgs args;
    args.attributes = &attrs;
    args.inputs.resize(inputs.size());
    args.outputs.resize(forward->outputs.size());
    for (size_t i = 0; i < inputs.size(); ++i) {
      args.input_shapes.push_back(inputs[i].shape());
      args.input_dtypes.push_back(inputs[i].dtype());
      const bool kept =
          std::find(saved_inputs.begin(), saved_inputs.end(), i) != saved_inputs.end();
      if (!only_saved || kept) args.inputs[i] = inputs[i];
    }
    for (size_t j = 0; j < forward->outputs.size(); ++j) {
      const bool kept =
          std::find(saved_outputs.begin(), saved_outputs.end(), j) != saved_outputs.end();
      if (!only_saved || kept) args.outputs[j] = forward->outputs[j];
    }
    args.extras = forward->extras;
    args.grad_outputs.resize(forward->outputs.size());
    args.grad_outputs[0] = dy;
    auto grads = RunBackward(op, KernelContext(), args, "com.microsoft");
    if (!grads.ok()) FAIL(grads.error().message);
    return std::move(grads).value();
  };
  ContribRun run;
  run.saved_only = backward(true);
  run.everything = backward(false);
  run.forward = std::move(forward).value();
  return run;
}

TEST_CASE("BiasGelu is Gelu of the sum and its backward reads only the saved sum", "[kernels]") {
  const Tensor x = RandomTensor({2, 3, 4}, 71, -3.0f, 3.0f);
  const Tensor bias = RandomTensor({4}, 72);
  const Tensor dy = RandomTensor({2, 3, 4}, 73);
  // The registry saves "gelu_input" (graph/ops/gelu_variants_ops.cc), neither input.
  const ContribRun r = RunContrib("BiasGelu", {x, bias}, Attributes(), 1, dy, {}, {});
  std::vector<float> sum(static_cast<size_t>(x.numel()));
  for (int64_t i = 0; i < x.numel(); ++i)
    sum[static_cast<size_t>(i)] = x.data()[i] + bias.data()[i % 4];
  const Tensor sum_tensor = Tensor::FromValues(x.shape(), sum);
  CHECK(r.forward.extras.at("gelu_input").ToVector() == sum);
  CHECK(r.forward.outputs[0].ToVector() == Forward1("Gelu", {sum_tensor}).ToVector());
  for (size_t i = 0; i < 2; ++i) CHECK(r.saved_only[i].ToVector() == r.everything[i].ToVector());
  // dA is Gelu's input gradient at the sum; dB sums it over the rows.
  BackwardArgs gelu_back;
  gelu_back.inputs = {sum_tensor};
  gelu_back.input_shapes = {x.shape()};
  gelu_back.input_dtypes = {DType::kFloat32};
  gelu_back.grad_outputs = {dy};
  auto dgelu = RunBackward("Gelu", KernelContext(), gelu_back);
  REQUIRE(dgelu.ok());
  CHECK(r.saved_only[0].ToVector() == (*dgelu)[0].ToVector());
  for (int64_t e = 0; e < 4; ++e) {
    double total = 0.0;
    for (int64_t row = 0; row < 6; ++row) total += (*dgelu)[0].data()[row * 4 + e];
    CHECK(r.saved_only[1].data()[e] == Approx(total).epsilon(1e-6));
  }
}

TEST_CASE("FastGelu is the tanh Gelu of the sum, backward from what the registry saves",
          "[kernels]") {
  const Tensor x = RandomTensor({3, 4}, 74, -3.0f, 3.0f);
  const Tensor dy = RandomTensor({3, 4}, 75);
  Attributes tanh_form;
  tanh_form.Set("approximate", std::string("tanh"));
  // Without a bias the registry saves X.
  const ContribRun plain = RunContrib("FastGelu", {x}, Attributes(), 1, dy, {0}, {});
  CHECK(plain.forward.outputs[0].ToVector() == Forward1("Gelu", {x}, tanh_form).ToVector());
  CHECK(plain.saved_only[0].ToVector() == plain.everything[0].ToVector());
  // With one, only "gelu_input".
  const ContribRun biased =
      RunContrib("FastGelu", {x, RandomTensor({4}, 76)}, Attributes(), 1, dy, {}, {});
  for (size_t i = 0; i < 2; ++i)
    CHECK(biased.saved_only[i].ToVector() == biased.everything[i].ToVector());
}

TEST_CASE("the skip normalisations' backward reads only what the registry saves", "[kernels]") {
  const Tensor x = RandomTensor({2, 3, 4}, 81, -2.0f, 2.0f);
  const Tensor skip = RandomTensor({2, 3, 4}, 82);
  const Tensor gamma = RandomTensor({4}, 83, 0.5f, 1.5f);
  const Tensor beta = RandomTensor({4}, 84);
  const Tensor bias = RandomTensor({4}, 85);
  const Tensor dy = RandomTensor({2, 3, 4}, 86);
  auto same = [](const InputGradients& a, const InputGradients& b) {
    REQUIRE(a.size() == b.size());
    for (size_t i = 0; i < a.size(); ++i) CHECK(a[i].ToVector() == b[i].ToVector());
  };
  // Without the optional outputs: gamma (and beta) and the extras.
  const ContribRun ln = RunContrib("SkipLayerNormalization", {x, skip, gamma, beta, bias},
                                   Attributes(), 1, dy, {2, 3}, {});
  same(ln.saved_only, ln.everything);
  const ContribRun rms = RunContrib("SkipSimplifiedLayerNormalization", {x, skip, gamma, bias},
                                    Attributes(), 1, dy, {2}, {});
  same(rms.saved_only, rms.everything);
  // With every output declared the registry saves those outputs instead of extras.
  for (const char* op : {"SkipLayerNormalization", "SkipSimplifiedLayerNormalization"}) {
    INFO(op);
    const bool layer = std::string(op) == "SkipLayerNormalization";
    const std::vector<Tensor> inputs = layer ? std::vector<Tensor>{x, skip, gamma, beta, bias}
                                             : std::vector<Tensor>{x, skip, gamma, bias};
    const ContribRun declared =
        RunContrib(op, inputs, Attributes(), 4, dy,
                   layer ? std::vector<size_t>{2, 3} : std::vector<size_t>{2}, {1, 2, 3});
    REQUIRE(declared.forward.outputs.size() == 4);
    // The sum output is input + skip + bias.
    for (int64_t i = 0; i < x.numel(); ++i)
      CHECK(declared.forward.outputs[3].data()[i] ==
            x.data()[i] + skip.data()[i] + bias.data()[i % 4]);
    BackwardArgs args;
    const Attributes none;
    args.attributes = &none;
    args.inputs.resize(inputs.size());
    args.inputs[2] = gamma;
    for (const Tensor& t : inputs) {
      args.input_shapes.push_back(t.shape());
      args.input_dtypes.push_back(t.dtype());
    }
    args.outputs = declared.forward.outputs;
    args.outputs[0] = Tensor();
    args.grad_outputs = {dy, Tensor(), Tensor(), Tensor()};
    auto from_outputs = RunBackward(op, KernelContext(), args, "com.microsoft");
    if (!from_outputs.ok()) FAIL(from_outputs.error().message);
    same(*from_outputs, declared.everything);
    // The sum output's own gradient (the residual the next layer reads) adds to the sum's:
    // input's gradient grows by it, skip's and bias's by its sums.
    const Tensor dresidual = RandomTensor({2, 3, 4}, 87);
    args.grad_outputs[3] = dresidual;
    auto with_residual = RunBackward(op, KernelContext(), args, "com.microsoft");
    REQUIRE(with_residual.ok());
    for (int64_t i = 0; i < x.numel(); ++i)
      CHECK((*with_residual)[0].data()[i] ==
            Approx((*from_outputs)[0].data()[i] + dresidual.data()[i]).margin(1e-6));
    const size_t bias_slot = layer ? 4 : 3;
    for (int64_t e = 0; e < 4; ++e) {
      double total = 0.0;
      for (int64_t row = 0; row < 6; ++row) total += dresidual.data()[row * 4 + e];
      CHECK((*with_residual)[bias_slot].data()[e] ==
            Approx((*from_outputs)[bias_slot].data()[e] + total).margin(1e-5));
    }
  }
}

}  // namespace
}  // namespace memplan::testing
