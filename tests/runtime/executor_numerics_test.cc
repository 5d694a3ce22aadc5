// Numerics of the executor on real models at small sizes: accumulation equals the full batch,
// recompute is bitwise neutral, mixed precision trains and stays near fp32, and the loss scaler
// skips an overflowing step.

#include <catch2/catch.hpp>
#include <cmath>
#include <cstring>

#include "tests/runtime/executor_test_support.h"

namespace memplan {
namespace {

using testing::Batches;
using testing::BindAllSymbols;
using testing::LoadFixture;

struct Run {
  std::vector<std::vector<float>> gradients;  // unscaled
  std::vector<double> losses;                 // per optimizer step
  std::vector<StepRecord> records;
};

// Accumulated gradients of k micro-batches of `rows` (samples 0..k*rows-1), then `steps` more
// optimizer steps on the same samples recording the losses.
Run Execute(const Graph& graph, const ProgramOptions& options, int64_t rows, int64_t other,
            ExecutorOptions eo, int steps = 0) {
  auto program = DeriveTrainingProgram(graph, options);
  REQUIRE(program.ok());
  const Bindings bindings = BindAllSymbols(*program, rows, other);
  auto data = SyntheticData::Create(graph, *program, bindings, /*seed=*/3);
  REQUIRE(data.ok());
  CpuBackend backend;
  Run run;
  auto executor = Executor::Create(graph, *program, bindings, backend, eo);
  if (!executor.ok()) FAIL(executor.error().message);
  Executor& ex = **executor;
  const std::vector<MicroBatch> batches = Batches(*data, ex.accumulation_steps(), rows);
  for (const MicroBatch& b : batches) {
    auto status = ex.RunMicroBatch(b);
    if (!status.ok()) FAIL(status.error().message);
  }
  auto grads = ex.Gradients();
  REQUIRE(grads.ok());
  run.gradients = *grads;
  for (auto& g : run.gradients)
    for (float& v : g) v /= ex.loss_scale();
  auto first = ex.RunOptimizerPhase();
  REQUIRE(first.ok());
  run.losses.push_back(first->loss);
  run.records.push_back(*first);
  for (int s = 0; s < steps; ++s) {
    auto r = ex.RunOptimizerStep(batches);
    if (!r.ok()) FAIL(r.error().message);
    run.losses.push_back(r->loss);
    run.records.push_back(*r);
  }
  return run;
}

// max over parameters of max|a - b| / max|b| (norm-relative: elementwise relative error is
// meaningless for gradients that cancel to ~0).
double MaxRelativeError(const std::vector<std::vector<float>>& a,
                        const std::vector<std::vector<float>>& b) {
  REQUIRE(a.size() == b.size());
  double worst = 0.0;
  for (size_t p = 0; p < a.size(); ++p) {
    REQUIRE(a[p].size() == b[p].size());
    double diff = 0.0, scale = 0.0;
    for (size_t i = 0; i < a[p].size(); ++i) {
      diff = std::max(diff, std::fabs(double(a[p][i]) - b[p][i]));
      scale = std::max(scale, std::fabs(double(b[p][i])));
    }
    if (diff > 0) worst = std::max(worst, diff / scale);
  }
  return worst;
}

bool BitwiseEqual(const std::vector<std::vector<float>>& a,
                  const std::vector<std::vector<float>>& b) {
  if (a.size() != b.size()) return false;
  for (size_t p = 0; p < a.size(); ++p)
    // memcmp on an empty vector's data() (which may be null) is undefined, so size first.
    if (a[p].size() != b[p].size() ||
        (!a[p].empty() && std::memcmp(a[p].data(), b[p].data(), a[p].size() * sizeof(float)) != 0))
      return false;
  return true;
}

TEST_CASE("executor: 2 micro-batches of 2 equal one batch of 4 (transformer, gpt)",
          "[executor][numerics]") {
  // fp32: the two runs differ only in summation order, ~1e-7 relative; 1e-5 leaves margin.
  for (const char* file : {"transformer_opset17.onnx", "gpt_opset13.onnx", "tiny_mlp.onnx"}) {
    DYNAMIC_SECTION(file) {
      const Graph graph = LoadFixture(file);
      ExecutorOptions eo;
      eo.disable_dropout = true;
      ProgramOptions split;
      split.accumulation_steps = 2;
      const Run a = Execute(graph, split, /*rows=*/2, /*seq=*/8, eo);
      const Run b = Execute(graph, ProgramOptions(), /*rows=*/4, /*seq=*/8, eo);
      double err = MaxRelativeError(a.gradients, b.gradients);
      INFO("max relative error " << err);
      CHECK(err <= 1e-5);
      // A check that can fail: the gradients are not trivially zero.
      double norm = 0;
      for (const auto& g : b.gradients)
        for (float v : g) norm += double(v) * v;
      CHECK(norm > 1e-12);
    }
  }
}

TEST_CASE("executor: recompute gives bitwise identical gradients", "[executor][numerics]") {
  // Dropout stays on: its masks are seeded per node and micro-batch, so a recompute reproduces
  // them.
  for (const char* file : {"gpt_opset13.onnx", "tiny_resnet.onnx", "transformer_opset13.onnx"}) {
    DYNAMIC_SECTION(file) {
      const Graph graph = LoadFixture(file);
      ProgramOptions plain;
      ProgramOptions recompute;
      for (size_t n = 0; n < graph.num_nodes(); n += 2) recompute.recompute.push_back(NodeId(n));
      const Run a = Execute(graph, plain, 2, 8, {});
      const Run b = Execute(graph, recompute, 2, 8, {});
      CHECK(BitwiseEqual(a.gradients, b.gradients));
      CHECK(a.losses == b.losses);
    }
  }
}

TEST_CASE("executor: mixed precision trains and stays near fp32", "[executor][numerics]") {
  const Graph graph = LoadFixture("transformer_opset17.onnx");
  ExecutorOptions eo;
  eo.disable_dropout = true;
  eo.optimizer.learning_rate = 3e-3;
  ProgramOptions fp32;
  const Run reference = Execute(graph, fp32, 2, 8, eo, /*steps=*/5);
  CHECK(reference.losses.back() < reference.losses.front());
  // Bounds, on the L2 norm of the whole gradient (a max-element measure is dominated by ReLU
  // units whose pre-activation changes sign under rounding): every activation is rounded to the
  // working dtype (fp16: 11 significant bits, u = 2^-11 ~ 4.9e-4; bf16: 8 bits, u = 2^-8 ~
  // 3.9e-3); through ~20 layers a few u of relative error per layer stays below 1e-2 (fp16) and
  // 5e-2 (bf16).
  for (Precision precision : {Precision::kFp16, Precision::kBf16}) {
    DYNAMIC_SECTION(PrecisionName(precision)) {
      ProgramOptions mixed;
      mixed.precision = precision;
      mixed.recompute = {NodeId(3), NodeId(10), NodeId(20)};
      const Run run = Execute(graph, mixed, 2, 8, eo, /*steps=*/5);
      double diff = 0, norm = 0;
      for (size_t p = 0; p < run.gradients.size(); ++p) {
        for (size_t i = 0; i < run.gradients[p].size(); ++i) {
          const double d = double(run.gradients[p][i]) - reference.gradients[p][i];
          diff += d * d;
          norm += double(reference.gradients[p][i]) * reference.gradients[p][i];
        }
      }
      const double err = std::sqrt(diff / norm);
      INFO("relative L2 error vs fp32 " << err);
      CHECK(err <= (precision == Precision::kFp16 ? 1e-2 : 5e-2));
      CHECK(err > 0);  // the rounding is really emulated
      CHECK(run.losses.back() < run.losses.front());
      CHECK(std::fabs(run.losses.front() - reference.losses.front()) <
            0.02 * std::fabs(reference.losses.front()));
    }
  }
}

TEST_CASE("executor: an overflowing fp16 step is skipped and the scale backs off",
          "[executor][numerics]") {
  const Graph graph = LoadFixture("tiny_mlp.onnx");
  ProgramOptions fp16;
  fp16.precision = Precision::kFp16;
  auto program = DeriveTrainingProgram(graph, fp16);
  REQUIRE(program.ok());
  const Bindings bindings = BindAllSymbols(*program, 4, 1);
  auto data = SyntheticData::Create(graph, *program, bindings, 1);
  REQUIRE(data.ok());
  CpuBackend backend;
  ExecutorOptions eo;
  // 2^100 times any gradient overflows fp16 (largest finite 65504).
  eo.initial_loss_scale = std::ldexp(1.0f, 100);
  eo.loss_scaler.growth_interval = 1;
  auto executor = Executor::Create(graph, *program, bindings, backend, eo);
  REQUIRE(executor.ok());
  Executor& ex = **executor;
  std::vector<std::vector<float>> before;
  for (int p = 0; p < 4; ++p) before.push_back(*ex.ParameterValues(p));
  auto skipped = ex.RunOptimizerStep(Batches(*data, 1, 4));
  REQUIRE(skipped.ok());
  CHECK(skipped->skipped);
  CHECK(skipped->loss_scale == std::ldexp(1.0f, 100));
  CHECK(skipped->next_loss_scale == std::ldexp(1.0f, 99));  // backoff factor 0.5
  for (int p = 0; p < 4; ++p) CHECK(*ex.ParameterValues(p) == before[static_cast<size_t>(p)]);
  // Back off until a step is clean: 2^100 -> ... -> a scale whose gradients fit fp16 (< 2^16 for
  // this model's O(1) gradients); then, with growth_interval 1, the clean step doubles it.
  StepRecord last;
  int skips = 1;
  for (int i = 0; i < 200; ++i) {
    auto r = ex.RunOptimizerStep(Batches(*data, 1, 4));
    REQUIRE(r.ok());
    last = *r;
    if (!r->skipped) break;
    ++skips;
  }
  REQUIRE_FALSE(last.skipped);
  // Each skipped step halved the scale: 2^100 after n skips is 2^(100 - n), and fp16 gradients
  // of O(1e-3..1) times the scale only fit below 65504, so at least 100 - 16 skips happened.
  CHECK(last.loss_scale == std::ldexp(1.0f, 100 - skips));
  CHECK(skips >= 100 - 16);
  CHECK(last.next_loss_scale == 2 * last.loss_scale);
  CHECK(*ex.ParameterValues(0) != before[0]);
}

}  // namespace
}  // namespace memplan
