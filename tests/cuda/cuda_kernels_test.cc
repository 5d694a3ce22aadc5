// The CUDA kernels against the CPU reference kernels (runtime/cpu), which are the independent
// implementation here: same inputs, results within fp32 rounding. [gpu] tests skip without a
// device; the host-side broadcasting rules are tested everywhere.

#include <catch2/catch.hpp>
#include <cmath>
#include <vector>

#include "runtime/cpu/kernel_registry.h"
#include "runtime/cuda/gemm.h"
#include "runtime/cuda/kernels/cuda_kernels.h"
#include "tests/cuda/gpu_test_util.h"

namespace memplan::cuda {
namespace {

using testing::CheckClose;
using testing::DeviceFloats;

// Deterministic, varied values in [-2, 2).
std::vector<float> Values(size_t n, int seed) {
  std::vector<float> v(n);
  for (size_t i = 0; i < n; ++i) {
    v[i] = static_cast<float>((static_cast<int>(i) * 37 + seed * 11) % 64) / 16.0f - 2.0f;
  }
  return v;
}

Tensor Host(const TensorShape& shape, const std::vector<float>& values) {
  return Tensor::FromValues(shape, values);
}

std::vector<float> CpuForward(const char* op, std::vector<Tensor> inputs, size_t output = 0,
                              const Attributes* attributes = nullptr) {
  ForwardArgs args;
  args.attributes = attributes;
  args.inputs = std::move(inputs);
  auto result = RunForward(op, KernelContext{}, args);
  REQUIRE(result.ok());
  return result->outputs.at(output).ToVector();
}

TEST_CASE("broadcast shapes follow numpy rules", "[cuda]") {
  auto shape = BroadcastShapes({2, 1, 4}, {3, 1});
  REQUIRE(shape.ok());
  CHECK(*shape == TensorShape{2, 3, 4});
  auto bad = BroadcastShapes({2, 3}, {4});
  REQUIRE_FALSE(bad.ok());
  CHECK(bad.error().message == "shapes [2, 3] and [4] do not broadcast");
}

TEST_CASE("binary ops with broadcasting match the CPU kernels", "[cuda][gpu]") {
  MEMPLAN_REQUIRE_GPU();
  const TensorShape a_shape = {2, 3, 4};
  const TensorShape b_shape = {3, 1};
  const std::vector<float> a = Values(24, 1);
  std::vector<float> b = Values(3, 2);
  for (float& v : b) v += 3.0f;  // keep Div away from zero
  const std::pair<BinaryOp, const char*> ops[] = {{BinaryOp::kAdd, "Add"},
                                                  {BinaryOp::kSub, "Sub"},
                                                  {BinaryOp::kMul, "Mul"},
                                                  {BinaryOp::kDiv, "Div"}};
  for (auto [op, name] : ops) {
    INFO(name);
    DeviceFloats da(a), db(b), out(24);
    REQUIRE(BinaryForward(op, da.get(), a_shape, db.get(), b_shape, out.get(), nullptr).ok());
    CheckClose(out.Download(), CpuForward(name, {Host(a_shape, a), Host(b_shape, b)}));

    // Backward against the CPU backward with dy = Values.
    const std::vector<float> dy = Values(24, 3);
    DeviceFloats ddy(dy), ga(24), gb(3);
    REQUIRE(BinaryBackward(op, da.get(), a_shape, db.get(), b_shape, ddy.get(), ga.get(), gb.get(),
                           nullptr)
                .ok());
    BackwardArgs args;
    args.inputs = {Host(a_shape, a), Host(b_shape, b)};
    args.input_shapes = {a_shape, b_shape};
    args.input_dtypes = {DType::kFloat32, DType::kFloat32};
    args.grad_outputs = {Host({2, 3, 4}, dy)};
    auto grads = RunBackward(name, KernelContext{}, args);
    REQUIRE(grads.ok());
    CheckClose(ga.Download(), grads->at(0).ToVector(), 1e-4);
    CheckClose(gb.Download(), grads->at(1).ToVector(), 1e-4);
  }
}

TEST_CASE("activations match the CPU kernels", "[cuda][gpu]") {
  MEMPLAN_REQUIRE_GPU();
  const std::vector<float> x = Values(100, 4);
  const std::vector<float> dy = Values(100, 5);
  const std::pair<UnaryOp, const char*> ops[] = {{UnaryOp::kRelu, "Relu"},
                                                 {UnaryOp::kGelu, "Gelu"},
                                                 {UnaryOp::kSigmoid, "Sigmoid"},
                                                 {UnaryOp::kTanh, "Tanh"}};
  for (auto [op, name] : ops) {
    INFO(name);
    DeviceFloats dx_in(x), y(100), ddy(dy), dx(100);
    REQUIRE(UnaryForward(op, dx_in.get(), y.get(), 100, nullptr).ok());
    const std::vector<float> expected_y = CpuForward(name, {Host({100}, x)});
    CheckClose(y.Download(), expected_y);

    // Only the tensor the program saves for this op is handed over, as the executor does.
    const bool reads_y = UnaryBackwardReadsOutput(op);
    REQUIRE(UnaryBackward(op, reads_y ? nullptr : dx_in.get(), reads_y ? y.get() : nullptr,
                          ddy.get(), dx.get(), 100, nullptr)
                .ok());
    BackwardArgs args;
    args.inputs = {Host({100}, x)};
    args.outputs = {Host({100}, expected_y)};
    args.input_shapes = {{100}};
    args.input_dtypes = {DType::kFloat32};
    args.grad_outputs = {Host({100}, dy)};
    auto grads = RunBackward(name, KernelContext{}, args);
    REQUIRE(grads.ok());
    CheckClose(dx.Download(), grads->at(0).ToVector(), 1e-4);
  }
}

TEST_CASE("softmax and layer norm match the CPU kernels", "[cuda][gpu]") {
  MEMPLAN_REQUIRE_GPU();
  const TensorShape shape = {3, 5};
  const std::vector<float> x = Values(15, 6);
  DeviceFloats dx_in(x), y(15);
  REQUIRE(SoftmaxForward(dx_in.get(), y.get(), 3, 5, nullptr).ok());
  CheckClose(y.Download(), CpuForward("Softmax", {Host(shape, x)}));

  const std::vector<float> gamma = Values(5, 7);
  const std::vector<float> beta = Values(5, 8);
  DeviceFloats dgamma_in(gamma), dbeta_in(beta), out(15), mean(3), invstd(3);
  REQUIRE(LayerNormForward(dx_in.get(), dgamma_in.get(), dbeta_in.get(), 1e-5f, out.get(),
                           mean.get(), invstd.get(), 3, 5, nullptr)
              .ok());
  CheckClose(out.Download(),
             CpuForward("LayerNormalization", {Host(shape, x), Host({5}, gamma), Host({5}, beta)}),
             1e-4);
}

TEST_CASE("reductions and row gather match the CPU kernels", "[cuda][gpu]") {
  MEMPLAN_REQUIRE_GPU();
  // ReduceMean over axis 1 of [2, 3, 4] is outer 2, reduce 3, inner 4.
  const std::vector<float> x = Values(24, 9);
  DeviceFloats dx_in(x), y(8);
  REQUIRE(ReduceMiddle(dx_in.get(), y.get(), 2, 3, 4, /*mean=*/true, nullptr).ok());
  Attributes attributes;
  attributes.Set("axes", std::vector<int64_t>{1});
  attributes.Set("keepdims", int64_t{0});
  CheckClose(y.Download(), CpuForward("ReduceMean", {Host({2, 3, 4}, x)}, 0, &attributes));

  // Gather rows 2, 0, -1 of a [4, 3] table.
  const std::vector<float> table = Values(12, 10);
  const std::vector<float> indices = {2, 0, -1};
  DeviceFloats dtable(table), dindices(indices), out(9);
  REQUIRE(GatherRows(dtable.get(), 4, 3, dindices.get(), 3, out.get(), nullptr).ok());
  CheckClose(
      out.Download(),
      CpuForward("Gather", {Host({4, 3}, table), Tensor::FromValues({3}, indices, DType::kInt64)}));
}

TEST_CASE("GEMM matches the CPU MatMul in fp32 and within fp16 rounding", "[cuda][gpu]") {
  MEMPLAN_REQUIRE_GPU();
  auto blas = BlasHandle::Create(nullptr);
  REQUIRE(blas.ok());
  const std::vector<float> a = Values(6 * 4, 11);  // [6, 4]
  const std::vector<float> b = Values(4 * 5, 12);  // [4, 5]
  const std::vector<float> expected = CpuForward("MatMul", {Host({6, 4}, a), Host({4, 5}, b)});
  GemmShape shape;
  shape.m = 6;
  shape.n = 5;
  shape.k = 4;
  DeviceFloats da(a), db(b), c(30);
  REQUIRE(Gemm(**blas, shape, DType::kFloat32, 1.0f, da.get(), db.get(), 0.0f, c.get()).ok());
  CheckClose(c.Download(), expected, 1e-5);

  // fp16 inputs on tensor cores, fp32 accumulation: Values are multiples of 1/16 in [-2, 2), so
  // exact in fp16; only the fp16 output rounding (relative 2^-11) remains.
  void* ha = nullptr;
  void* hb = nullptr;
  void* hc = nullptr;
  REQUIRE(CheckCuda(cudaMalloc(&ha, 24 * 2), "cudaMalloc").ok());
  REQUIRE(CheckCuda(cudaMalloc(&hb, 20 * 2), "cudaMalloc").ok());
  REQUIRE(CheckCuda(cudaMalloc(&hc, 30 * 2), "cudaMalloc").ok());
  REQUIRE(CastBuffer(da.get(), DType::kFloat32, ha, DType::kFloat16, 24, nullptr).ok());
  REQUIRE(CastBuffer(db.get(), DType::kFloat32, hb, DType::kFloat16, 20, nullptr).ok());
  REQUIRE(Gemm(**blas, shape, DType::kFloat16, 1.0f, ha, hb, 0.0f, hc).ok());
  DeviceFloats back(30);
  REQUIRE(CastBuffer(hc, DType::kFloat16, back.get(), DType::kFloat32, 30, nullptr).ok());
  CheckClose(back.Download(), expected, 1e-2);
  (void)cudaFree(ha);
  (void)cudaFree(hb);
  (void)cudaFree(hc);
}

}  // namespace
}  // namespace memplan::cuda
