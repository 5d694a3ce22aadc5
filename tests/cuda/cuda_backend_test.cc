// The CUDA backend against the CPU reference backend (runtime/cpu), the independent
// implementation here: every op's forward and backward on tiny tensors, and whole training steps
// of small models. Bounds: fp32 on both sides with cuBLAS in plain fp32 (no TF32), so the only
// differences are summation order and fast-math transcendental rounding — 1e-4 absolute+relative
// per element for kernels (a few ulps of 2^-24 over sums of at most a few hundred terms, with
// margin), 1e-3 relative for losses after two optimizer steps (errors compound through the
// updates). [gpu] tests skip without a device; the no-device error is tested everywhere.

#include <catch2/catch.hpp>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "runtime/cuda/cuda_backend.h"
#include "tests/cuda/gpu_test_util.h"
#include "tests/runtime/executor_test_support.h"

namespace memplan {
namespace {

using cuda::testing::CheckClose;

// Deterministic, varied values in [-2, 2).
std::vector<float> Ramp(int64_t n, int seed) {
  std::vector<float> v(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i)
    v[static_cast<size_t>(i)] = static_cast<float>((i * 37 + seed * 11) % 64) / 16.0f - 2.0f;
  return v;
}

struct Input {
  TensorShape shape;
  std::vector<float> values;  // empty = a ramp
  DType dtype = DType::kFloat32;
  bool constant = false;  // passed through Backend::Constant (shapes, axes, fixed indices)
  bool differentiable = true;
};

struct OpCase {
  std::string op;
  Attributes attributes;
  std::vector<Input> inputs;
  int num_outputs = 1;
  std::map<std::string, std::pair<TensorShape, DType>> extras;  // saved for backward
  bool differentiable = true;  // false: the op has no backward (comparisons, Not)
  // Input 0's gradient is a view of the output gradient's buffer, as the program hands a view
  // op's input gradient (analyzer/derivation/step_emission.cc).
  bool gradient_is_view_of_dy = false;
};

struct OpResult {
  std::vector<std::vector<float>> outputs;
  std::vector<std::vector<float>> gradients;  // per differentiable input
};

OpResult RunOp(Backend& backend, const OpCase& c) {
  OpResult result;
  std::vector<DeviceTensor> inputs;
  for (size_t i = 0; i < c.inputs.size(); ++i) {
    const Input& in = c.inputs[i];
    const std::vector<float> values =
        in.values.empty() ? Ramp(NumElements(in.shape), static_cast<int>(i)) : in.values;
    if (in.constant) {
      auto t = backend.Constant(in.shape, in.dtype, values);
      REQUIRE(t.ok());
      inputs.push_back(*t);
    } else {
      auto t = backend.Allocate(in.shape, in.dtype, MemoryCategory::kActivations);
      REQUIRE(t.ok());
      REQUIRE(backend.Upload(*t, values).ok());
      inputs.push_back(*t);
    }
  }
  std::map<std::string, DeviceTensor> extras;
  for (const auto& [name, spec] : c.extras) {
    auto t = backend.Allocate(spec.first, spec.second, MemoryCategory::kActivations);
    REQUIRE(t.ok());
    extras[name] = *t;
  }
  ForwardCall call;
  call.op_type = c.op;
  call.attributes = &c.attributes;
  call.inputs = inputs;
  call.num_outputs = c.num_outputs;
  call.outputs.assign(static_cast<size_t>(c.num_outputs), DeviceTensor());
  call.extras = extras;
  auto outs = backend.Forward(call);
  if (!outs.ok()) FAIL(c.op << " forward: " << outs.error().message);
  for (const DeviceTensor& o : *outs) {
    if (!o.defined()) continue;
    auto values = backend.Download(o);
    REQUIRE(values.ok());
    result.outputs.push_back(*values);
  }
  if (!c.differentiable) return result;

  BackwardCall back;
  back.op_type = c.op;
  back.attributes = &c.attributes;
  back.inputs = inputs;
  back.outputs = *outs;
  back.extras = extras;
  auto dy = backend.Allocate(outs->at(0).shape, DType::kFloat32, MemoryCategory::kTransients);
  REQUIRE(dy.ok());
  REQUIRE(backend.Upload(*dy, Ramp(outs->at(0).numel(), 5)).ok());
  back.grad_outputs.assign(outs->size(), DeviceTensor());
  back.grad_outputs[0] = *dy;
  for (size_t i = 0; i < c.inputs.size(); ++i) {
    back.input_shapes.push_back(c.inputs[i].shape);
    back.input_dtypes.push_back(c.inputs[i].dtype);
    DeviceTensor grad;
    if (i == 0 && c.gradient_is_view_of_dy) {
      grad = dy->View(c.inputs[0].shape);
    } else if (c.inputs[i].differentiable && !c.inputs[i].constant) {
      auto g = backend.Allocate(c.inputs[i].shape, DType::kFloat32, MemoryCategory::kGradients);
      REQUIRE(g.ok());
      grad = *g;
    }
    back.grad_inputs.push_back(grad);
    back.accumulate.push_back(false);
  }
  const Status status = backend.Backward(back);
  if (!status.ok()) FAIL(c.op << " backward: " << status.error().message);
  for (const DeviceTensor& g : back.grad_inputs) {
    if (!g.defined()) continue;
    auto values = backend.Download(g);
    REQUIRE(values.ok());
    result.gradients.push_back(*values);
  }
  return result;
}

void CompareWithCpu(const OpCase& c) {
  INFO(c.op);
  auto cuda = MakeCudaBackend();
  REQUIRE(cuda.ok());
  CpuBackend cpu;
  const OpResult expected = RunOp(cpu, c);
  const OpResult actual = RunOp(**cuda, c);
  REQUIRE(actual.outputs.size() == expected.outputs.size());
  for (size_t j = 0; j < expected.outputs.size(); ++j) {
    INFO("output " << j);
    CheckClose(actual.outputs[j], expected.outputs[j], 1e-4);
  }
  REQUIRE(actual.gradients.size() == expected.gradients.size());
  for (size_t i = 0; i < expected.gradients.size(); ++i) {
    INFO("gradient " << i);
    CheckClose(actual.gradients[i], expected.gradients[i], 1e-4);
  }
}

Input Const(TensorShape shape, std::vector<float> values) {
  Input in{std::move(shape), std::move(values), DType::kInt64, true, false};
  return in;
}

TEST_CASE("without a device the CUDA backend reports it", "[cuda]") {
  if (cuda::DeviceCount() > 0) return;  // covered by the [gpu] tests then
  auto backend = MakeCudaBackend();
  REQUIRE_FALSE(backend.ok());
  CHECK(backend.error().message == "no CUDA device available");
}

TEST_CASE("CUDA MatMul and Gemm match the CPU reference", "[gpu]") {
  MEMPLAN_REQUIRE_GPU();
  // Batch folded into M, equal batches, and A broadcast over B's batch.
  CompareWithCpu({"MatMul", {}, {{{2, 3, 4}}, {{4, 5}}}});
  CompareWithCpu({"MatMul", {}, {{{2, 3, 4}}, {{2, 4, 5}}}});
  CompareWithCpu({"MatMul", {}, {{{3, 4}}, {{2, 4, 5}}}});
  OpCase gemm{"Gemm", {}, {{{3, 4}}, {{5, 4}}, {{5}}}};
  gemm.attributes.Set("transB", int64_t{1});
  gemm.attributes.Set("alpha", 0.5);
  CompareWithCpu(gemm);
}

TEST_CASE("CUDA elementwise ops match the CPU reference", "[gpu]") {
  MEMPLAN_REQUIRE_GPU();
  for (const char* op : {"Add", "Sub", "Mul"}) CompareWithCpu({op, {}, {{{2, 3}}, {{3}}}});
  // Divisors away from zero.
  CompareWithCpu({"Div", {}, {{{2, 3}}, {{3}, {1.5f, -2.0f, 4.0f}}}});
  for (const char* op : {"Relu", "Tanh", "Sigmoid", "Erf"}) CompareWithCpu({op, {}, {{{2, 5}}}});
  Input condition{{2, 1}, {1.0f, 0.0f}, DType::kBool, true, false};
  CompareWithCpu({"Where", {}, {condition, {{2, 3}}, {{3}}}});
}

TEST_CASE("CUDA normalizations match the CPU reference", "[gpu]") {
  MEMPLAN_REQUIRE_GPU();
  CompareWithCpu({"Softmax", {}, {{{3, 7}}}});
  OpCase ln{"LayerNormalization", {}, {{{2, 3, 4}}, {{4}}, {{4}}}};
  ln.extras["mean"] = {{6}, DType::kFloat32};
  ln.extras["invstd"] = {{6}, DType::kFloat32};
  CompareWithCpu(ln);
  OpCase bn{"BatchNormalization",
            {},
            {{{2, 3, 2, 2}},
             {{3}},
             {{3}},
             {{3}, {}, DType::kFloat32, false, false},
             {{3}, {1.0f, 2.0f, 0.5f}, DType::kFloat32, false, false}},
            3};
  bn.extras["mean"] = {{3}, DType::kFloat32};
  bn.extras["invstd"] = {{3}, DType::kFloat32};
  CompareWithCpu(bn);
}

TEST_CASE("CUDA layout ops match the CPU reference", "[gpu]") {
  MEMPLAN_REQUIRE_GPU();
  OpCase transpose{"Transpose", {}, {{{2, 3, 4}}}};
  transpose.attributes.Set("perm", std::vector<int64_t>{2, 0, 1});
  CompareWithCpu(transpose);
  // A view op's input gradient shares its output gradient's buffer: the permuted copy must not
  // read what it has already overwritten (it did, and transformer gradients differed run to run).
  transpose.gradient_is_view_of_dy = true;
  CompareWithCpu(transpose);
  CompareWithCpu({"Reshape", {}, {{{2, 3, 4}}, Const({2}, {6, -1})}});
  CompareWithCpu({"Slice",
                  {},
                  {{{4, 6}}, Const({1}, {1}), Const({1}, {6}), Const({1}, {1}), Const({1}, {2})}});
  OpCase concat{"Concat", {}, {{{2, 3}}, {{2, 2}}}};
  concat.attributes.Set("axis", int64_t{1});
  CompareWithCpu(concat);
  OpCase split{"Split", {}, {{{2, 6}}}, 3};
  split.attributes.Set("axis", int64_t{1});
  CompareWithCpu(split);
  CompareWithCpu({"Expand", {}, {{{3, 1}}, Const({3}, {2, 3, 4})}});
  // An Expand that adds no element shares its gradient buffer too: zero-filling dX first
  // must not erase dY.
  OpCase same_size{"Expand", {}, {{{3, 4}}, Const({2}, {3, 4})}};
  same_size.gradient_is_view_of_dy = true;
  CompareWithCpu(same_size);
}

TEST_CASE("CUDA comparisons and Not match the CPU reference", "[gpu]") {
  MEMPLAN_REQUIRE_GPU();
  // Run-time operands (not constants, which are folded on the host), broadcast, with ties.
  const Input a{{2, 3}, {1, 2, 3, 4, 5, 6}};
  const Input b{{3}, {2, 2, 6}};
  for (const char* op : {"Equal", "Less", "LessOrEqual", "Greater", "GreaterOrEqual"}) {
    OpCase compare{op, {}, {a, b}};
    compare.differentiable = false;
    CompareWithCpu(compare);
  }
  OpCase negate{"Not", {}, {{{4}, {0, 1, 1, 0}, DType::kBool}}};
  negate.differentiable = false;
  CompareWithCpu(negate);
}

TEST_CASE("CUDA gather, convolution and pooling match the CPU reference", "[gpu]") {
  MEMPLAN_REQUIRE_GPU();
  // Embedding rows with run-time indices (one repeated), and a constant index on axis 1.
  CompareWithCpu(
      {"Gather", {}, {{{5, 3}}, {{4}, {4.0f, 0.0f, 4.0f, 2.0f}, DType::kInt64, false, false}}});
  OpCase pick{"Gather", {}, {{{2, 3, 4}}, Const({}, {0})}};
  pick.attributes.Set("axis", int64_t{1});
  CompareWithCpu(pick);
  OpCase conv{"Conv", {}, {{{2, 3, 5, 5}}, {{4, 3, 3, 3}}, {{4}}}};
  conv.attributes.Set("kernel_shape", std::vector<int64_t>{3, 3});
  conv.attributes.Set("pads", std::vector<int64_t>{1, 1, 1, 1});
  conv.attributes.Set("strides", std::vector<int64_t>{2, 2});
  CompareWithCpu(conv);
  // Ramp values repeat every 64 elements: ties are avoided by the 4x4 input's 32 distinct values.
  OpCase pool{"MaxPool", {}, {{{1, 2, 4, 4}}}};
  pool.attributes.Set("kernel_shape", std::vector<int64_t>{2, 2});
  pool.attributes.Set("strides", std::vector<int64_t>{2, 2});
  pool.extras["indices"] = {{1, 2, 2, 2}, DType::kInt64};
  CompareWithCpu(pool);
  CompareWithCpu({"GlobalAveragePool", {}, {{{2, 3, 2, 2}}}});
}

TEST_CASE("CUDA backend names ops it cannot run", "[gpu]") {
  MEMPLAN_REQUIRE_GPU();
  auto backend = MakeCudaBackend();
  REQUIRE(backend.ok());
  auto x = (*backend)->Allocate({2, 2}, DType::kFloat32, MemoryCategory::kActivations);
  REQUIRE(x.ok());
  ForwardCall call;
  call.op_type = "Einsum";
  call.inputs = {*x};
  call.outputs = {DeviceTensor()};
  auto out = (*backend)->Forward(call);
  REQUIRE_FALSE(out.ok());
  CHECK(out.error().message == "the cuda backend has no kernel for Einsum");
}

TEST_CASE("CUDA dropout keeps or zeroes each element and scales the kept ones", "[gpu]") {
  MEMPLAN_REQUIRE_GPU();
  auto backend = MakeCudaBackend();
  REQUIRE(backend.ok());
  Backend& b = **backend;
  const std::vector<float> ones(1000, 1.0f);
  auto x = b.Allocate({1000}, DType::kFloat32, MemoryCategory::kActivations);
  REQUIRE(x.ok());
  REQUIRE(b.Upload(*x, ones).ok());
  auto ratio = b.Constant({}, DType::kFloat32, {0.25f});
  REQUIRE(ratio.ok());
  ForwardCall call;
  call.op_type = "Dropout";
  call.inputs = {*x, *ratio};
  call.outputs = {DeviceTensor()};
  call.seed = 42;
  auto out = b.Forward(call);
  REQUIRE(out.ok());
  auto y = b.Download(out->at(0));
  REQUIRE(y.ok());
  int kept = 0;
  for (float v : *y) {
    // Kept elements are scaled by 1 / (1 - 0.25).
    CHECK((v == 0.0f || v == Approx(4.0f / 3.0f)));
    kept += v != 0.0f;
  }
  // 750 expected; a binomial(1000, 0.75) lies within 690..810 with overwhelming probability.
  CHECK(kept > 690);
  CHECK(kept < 810);
  // The same seed gives the same mask (recompute relies on it).
  auto again = b.Forward(call);
  REQUIRE(again.ok());
  CHECK(*b.Download(again->at(0)) == *y);
}

// Two optimizer steps of a fixture model on both backends: the losses agree.
void CompareTraining(const std::string& fixture, Precision precision, double bound) {
  INFO(fixture);
  const Graph graph = testing::LoadFixture(fixture);
  ProgramOptions options;
  options.precision = precision;
  auto program = DeriveTrainingProgram(graph, options);
  REQUIRE(program.ok());
  const Bindings bindings = testing::BindAllSymbols(*program, /*batch=*/2, /*other=*/4);
  auto data = SyntheticData::Create(graph, *program, bindings, /*seed=*/3);
  REQUIRE(data.ok());
  ExecutorOptions eo;
  eo.disable_dropout = true;  // the backends draw different masks
  auto run = [&](Backend& backend) {
    std::vector<double> losses;
    auto executor = Executor::Create(graph, *program, bindings, backend, eo);
    if (!executor.ok()) FAIL(executor.error().message);
    for (int step = 0; step < 2; ++step) {
      auto record = (*executor)->RunOptimizerStep(testing::Batches(*data, 1, 2, step));
      if (!record.ok()) FAIL(record.error().message);
      losses.push_back(record->loss);
    }
    return std::make_pair(losses, (*executor)->memory().peak_bytes);
  };
  CpuBackend cpu;
  auto cuda = MakeCudaBackend();
  REQUIRE(cuda.ok());
  const auto expected = run(cpu);
  const auto actual = run(**cuda);
  for (size_t s = 0; s < expected.first.size(); ++s)
    CHECK(actual.first[s] == Approx(expected.first[s]).epsilon(bound));
  // Both interpret the same program with the same accounting: equal peaks.
  CHECK(actual.second == expected.second);
}

TEST_CASE("CUDA training steps match the CPU reference", "[gpu]") {
  MEMPLAN_REQUIRE_GPU();
  CompareTraining("tiny_mlp.onnx", Precision::kFp32, 1e-3);
  CompareTraining("tiny_resnet.onnx", Precision::kFp32, 1e-3);
  CompareTraining("transformer_opset17.onnx", Precision::kFp32, 1e-3);
  CompareTraining("gpt_opset17.onnx", Precision::kFp32, 1e-3);
  // fp16 rounds differently on the two sides (fp16 GEMM accumulation order); 1e-2 as
  // runtime/verification.h bounds fp16.
  CompareTraining("tiny_mlp.onnx", Precision::kFp16, 1e-2);
}

}  // namespace
}  // namespace memplan
