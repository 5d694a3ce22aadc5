// VerifyPlanOnBackend: the engine of `memplan verify` on the CPU backend.

#include <catch2/catch.hpp>
#include <cmath>
#include <utility>

#include "runtime/cpu/cpu_backend.h"
#include "runtime/verification.h"
#include "tests/graph/proto_model.h"
#include "tests/runtime/executor_test_support.h"

namespace memplan {
namespace {

using testing::LoadFixture;

VerifyPlan PlanFor(const Graph& graph, int64_t m, int64_t k) {
  VerifyPlan plan;
  plan.micro_batch = m;
  plan.program.accumulation_steps = k;
  plan.bindings = testing::BindNonBatchSymbols(graph, 8);
  return plan;
}

// Only the memory and step checks: the gradient- and recompute-equivalence runs switched off.
VerifyOptions MemoryChecksOnly() {
  VerifyOptions options;
  options.check_gradient_equivalence = false;
  options.check_recompute_equivalence = false;
  return options;
}

// `plan` verified on fresh CPU backends; fails the test unless the verification ran (its checks
// may still fail: the report says which).
VerificationReport VerifyOnCpu(const Graph& graph, const VerifyPlan& plan,
                               const VerifyOptions& options = VerifyOptions()) {
  auto report = VerifyPlanOnBackend(graph, plan, testing::CpuBackends(), options);
  if (!report.ok()) FAIL(report.error().message);
  return std::move(report).value();
}

TEST_CASE("verify: a transformer plan passes every check", "[verify]") {
  const Graph graph = LoadFixture("transformer_opset17.onnx");
  VerifyPlan plan = PlanFor(graph, /*m=*/2, /*k=*/2);
  plan.program.recompute = {NodeId(5), NodeId(6)};
  const VerificationReport report = VerifyOnCpu(graph, plan);
  CHECK(report.device == "cpu");
  CHECK(report.measured.peak_bytes == report.predicted.peak_bytes);
  CHECK(report.memory_passed);
  CHECK(report.gradient.checked);
  CHECK(report.gradient.passed);
  CHECK(report.gradient.max_rel_error <= 1e-5);
  CHECK(report.recompute.checked);
  CHECK(report.recompute.passed);
  REQUIRE(report.steps.size() == 3);
  CHECK(report.loss_decreased == std::optional<bool>(true));
  CHECK(report.samples_per_second > 0);
  CHECK(report.passed);
}

TEST_CASE("verify: BatchNormalization skips the accumulation check with a reason", "[verify]") {
  const Graph graph = LoadFixture("tiny_resnet.onnx");
  const VerificationReport report = VerifyOnCpu(graph, PlanFor(graph, 2, 2));
  CHECK_FALSE(report.gradient.checked);
  CHECK(report.gradient.note.find("BatchNormalization") != std::string::npos);
  CHECK(report.recompute.passed);
  CHECK(report.measured.peak_bytes == report.predicted.peak_bytes);
}

TEST_CASE("verify: fp16 plan with accumulation passes within the fp16 bound", "[verify]") {
  const Graph graph = LoadFixture("tiny_mlp.onnx");
  VerifyPlan plan = PlanFor(graph, 4, 2);
  plan.program.precision = Precision::kFp16;
  VerifyOptions options;
  options.steps = 4;
  options.executor.optimizer.learning_rate = 1e-2;
  const VerificationReport report = VerifyOnCpu(graph, plan, options);
  CHECK(report.gradient.checked);
  CHECK(report.gradient.bound == 1e-2);
  CHECK(report.gradient.passed);
  CHECK(report.memory_passed);
  CHECK(report.passed);
}

// x [batch, 8] -> MatMul(W [8, 8]) -> Dropout(h, ratio) -> MatMul(W2 [8, 4]), the ratio a
// one-element float initializer as the dynamo exporter lifts F.dropout's p (a Python float in
// torch). Under bf16 autocast nothing casts it (OpSchema::scalar_argument_inputs): before, the
// forward read an autocast cast of it that was freed after the forward, so the Dropout's
// backward found no ratio ("backward needs the ratio input") and verify stopped.
TEST_CASE("verify: a Dropout ratio initializer is read as stored under bf16 autocast", "[verify]") {
  testing::ProtoModel m(/*opset=*/13);
  m.Input("x", onnx::TensorProto::FLOAT, {"batch", 8});
  m.Initializer("W", onnx::TensorProto::FLOAT, {8, 8});
  m.Initializer("W2", onnx::TensorProto::FLOAT, {8, 4});
  m.FloatScalar("ratio", 0.25F);
  m.Node("MatMul", {"x", "W"}, {"h"});
  m.Node("Dropout", {"h", "ratio"}, {"d"});
  m.Node("MatMul", {"d", "W2"}, {"y"});
  m.Output("y", onnx::TensorProto::FLOAT, {{"batch", 4}});
  const Graph graph = m.Import("dropout_ratio_initializer.onnx");
  for (AmpMode mode : {AmpMode::kAutocast, AmpMode::kMasterWeights}) {
    CAPTURE(AmpModeName(mode));
    VerifyPlan plan = PlanFor(graph, /*m=*/2, /*k=*/1);
    plan.program.precision = Precision::kBf16;
    plan.program.amp_mode = mode;
    const VerificationReport report = VerifyOnCpu(graph, plan, MemoryChecksOnly());
    CHECK(report.measured.peak_bytes == report.predicted.peak_bytes);
    CHECK(report.passed);
  }
}

TEST_CASE("verify: a plan above the memory limit is refused", "[verify]") {
  const Graph graph = LoadFixture("tiny_mlp.onnx");
  VerifyOptions options;
  options.max_memory_bytes = 1024;  // tiny_mlp's parameters alone are 676 * 4 = 2704 bytes
  auto report = VerifyPlanOnBackend(graph, PlanFor(graph, 4, 1), testing::CpuBackends(), options);
  REQUIRE_FALSE(report.ok());
  CHECK(report.error().message.find("--max-cpu-memory") != std::string::npos);
}

TEST_CASE("verify: a tolerance below the measured excess fails the memory check", "[verify]") {
  // The measured peak equals the prediction, so a negative tolerance (measured must be below
  // predicted * 0.5) makes the check fail: the check is live.
  const Graph graph = LoadFixture("tiny_mlp.onnx");
  VerifyOptions options = MemoryChecksOnly();
  options.tolerance = -0.5;
  const VerificationReport report = VerifyOnCpu(graph, PlanFor(graph, 4, 1), options);
  CHECK_FALSE(report.memory_passed);
  CHECK_FALSE(report.passed);
}

// The CPU backend with a fixed number of bytes always live on top of the program's (as a device
// allocator's own bookkeeping would be): the measured peak exceeds the prediction by exactly that.
class OverheadBackend final : public Backend {
 public:
  explicit OverheadBackend(int64_t overhead) : overhead_(overhead) {}
  std::string_view name() const override { return "cpu+overhead"; }
  void NoteStep(const StepSite& site) override { cpu_.EnterStep(site); }
  Expected<DeviceTensor> Allocate(const TensorShape& shape, DType dtype,
                                  MemoryCategory category) override {
    return cpu_.Allocate(shape, dtype, category);
  }
  Expected<DeviceTensor> Constant(const TensorShape& shape, DType dtype,
                                  const std::vector<float>& values) override {
    return cpu_.Constant(shape, dtype, values);
  }
  DeviceMemory Memory() const override {
    DeviceMemory m = cpu_.Memory();
    m.live_total += overhead_;
    m.live[MemoryCategory::kOther] += overhead_;
    m.peak_total += overhead_;
    m.peak[MemoryCategory::kOther] += overhead_;
    return m;
  }
  void ResetPeaks() override { cpu_.ResetPeaks(); }
  Status Upload(const DeviceTensor& dst, const std::vector<float>& values) override {
    return cpu_.Upload(dst, values);
  }
  Expected<std::vector<float>> Download(const DeviceTensor& src) override {
    return cpu_.Download(src);
  }
  Status Cast(const DeviceTensor& src, const DeviceTensor& dst) override {
    return cpu_.Cast(src, dst);
  }
  Status Add(const DeviceTensor& src, const DeviceTensor& dst) override {
    return cpu_.Add(src, dst);
  }
  Status Fill(const DeviceTensor& dst, float value) override { return cpu_.Fill(dst, value); }
  Status Scale(const std::vector<DeviceTensor>& tensors, float factor) override {
    return cpu_.Scale(tensors, factor);
  }
  Expected<bool> UnscaleAndCheckOverflow(const std::vector<DeviceTensor>& gradients,
                                         float inv_scale) override {
    return cpu_.UnscaleAndCheckOverflow(gradients, inv_scale);
  }
  Expected<double> GlobalNorm(const std::vector<DeviceTensor>& tensors) override {
    return cpu_.GlobalNorm(tensors);
  }
  Expected<std::vector<DeviceTensor>> Forward(const ForwardCall& call) override {
    return cpu_.Forward(call);
  }
  Status Backward(const BackwardCall& call) override { return cpu_.Backward(call); }
  Status LossForward(const LossCall& call) override { return cpu_.LossForward(call); }
  Status LossBackward(const LossBackwardCall& call) override { return cpu_.LossBackward(call); }
  Status OptimizerStep(const OptimizerCall& call) override { return cpu_.OptimizerStep(call); }

 private:
  CpuBackend cpu_;
  int64_t overhead_;
};

TEST_CASE("verify: measured above predicted fails beyond the tolerance, passes within",
          "[verify]") {
  // tiny_mlp, m = 4, k = 1, Adam: the exact peak P is a few KiB. An overhead of P/200 (0.5%)
  // stays within the default 1% tolerance; P/20 (5%) exceeds it, and only the memory check
  // fails, which fails the verification (exit 1 in the CLI).
  const Graph graph = LoadFixture("tiny_mlp.onnx");
  const VerifyOptions options = MemoryChecksOnly();
  const int64_t predicted = VerifyOnCpu(graph, PlanFor(graph, 4, 1), options).predicted.peak_bytes;
  REQUIRE(predicted > 200);
  for (int64_t divisor : {200, 20}) {
    DYNAMIC_SECTION("overhead predicted/" << divisor) {
      const int64_t overhead = predicted / divisor;
      BackendFactory factory = [overhead]() -> Expected<std::unique_ptr<Backend>> {
        return std::unique_ptr<Backend>(new OverheadBackend(overhead));
      };
      auto report = VerifyPlanOnBackend(graph, PlanFor(graph, 4, 1), factory, options);
      if (!report.ok()) FAIL(report.error().message);
      CHECK(report->predicted.peak_bytes == predicted);
      CHECK(report->measured.peak_bytes == predicted + overhead);
      CHECK(report->memory_passed == (divisor == 200));
      CHECK(report->passed == (divisor == 200));
    }
  }
}

TEST_CASE("verify: an fp16 overflow is reported as a loss-scaler event", "[verify]") {
  // An initial scale of 2^100 overflows fp16 (largest finite 65504) on the first step, which is
  // skipped and backs the scale off by GradScaler's 0.5 to 2^99.
  const Graph graph = LoadFixture("tiny_mlp.onnx");
  VerifyPlan plan = PlanFor(graph, 4, 1);
  plan.program.precision = Precision::kFp16;
  VerifyOptions options = MemoryChecksOnly();
  options.steps = 2;
  options.executor.initial_loss_scale = std::ldexp(1.0f, 100);
  const VerificationReport report = VerifyOnCpu(graph, plan, options);
  REQUIRE_FALSE(report.scaler_events.empty());
  const LossScalerEvent& first = report.scaler_events.front();
  CHECK(first.step == 0);
  CHECK(first.event == "overflow_skip");
  CHECK(first.scale_before == std::ldexp(1.0f, 100));
  CHECK(first.scale_after == std::ldexp(1.0f, 99));
  CHECK(report.steps.at(0).skipped);
}

}  // namespace
}  // namespace memplan
