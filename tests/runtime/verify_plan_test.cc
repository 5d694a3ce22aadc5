// VerifyPlanOnBackend: the engine of `memplan verify` on the CPU backend.

#include <catch2/catch.hpp>

#include "runtime/cpu/cpu_backend.h"
#include "runtime/verification.h"
#include "tests/runtime/executor_test_support.h"

namespace memplan {
namespace {

using testing::LoadFixture;

BackendFactory Cpu() {
  return []() -> Expected<std::unique_ptr<Backend>> {
    return std::unique_ptr<Backend>(new CpuBackend());
  };
}

VerifyPlan PlanFor(const Graph& graph, int64_t m, int64_t k) {
  VerifyPlan plan;
  plan.micro_batch = m;
  plan.program.accumulation_steps = k;
  plan.bindings = Bindings(&graph.symbols());
  for (SymbolId s = 0; s < static_cast<SymbolId>(graph.symbols().size()); ++s)
    if (!graph.batch_symbol() || *graph.batch_symbol() != s) plan.bindings.Bind(s, 8);
  return plan;
}

TEST_CASE("verify: a transformer plan passes every check", "[verify]") {
  const Graph graph = LoadFixture("transformer_opset17.onnx");
  VerifyPlan plan = PlanFor(graph, /*m=*/2, /*k=*/2);
  plan.program.recompute = {NodeId(5), NodeId(6)};
  VerifyOptions options;
  auto report = VerifyPlanOnBackend(graph, plan, Cpu(), options);
  if (!report.ok()) FAIL(report.error().message);
  CHECK(report->device == "cpu");
  CHECK(report->measured.peak_bytes == report->predicted.peak_bytes);
  CHECK(report->memory_passed);
  CHECK(report->gradient.checked);
  CHECK(report->gradient.passed);
  CHECK(report->gradient.max_rel_error <= 1e-5);
  CHECK(report->recompute.checked);
  CHECK(report->recompute.passed);
  REQUIRE(report->steps.size() == 3);
  CHECK(report->loss_decreased == std::optional<bool>(true));
  CHECK(report->samples_per_second > 0);
  CHECK(report->passed);
}

TEST_CASE("verify: BatchNormalization skips the accumulation check with a reason", "[verify]") {
  const Graph graph = LoadFixture("tiny_resnet.onnx");
  auto report = VerifyPlanOnBackend(graph, PlanFor(graph, 2, 2), Cpu(), VerifyOptions());
  if (!report.ok()) FAIL(report.error().message);
  CHECK_FALSE(report->gradient.checked);
  CHECK(report->gradient.note.find("BatchNormalization") != std::string::npos);
  CHECK(report->recompute.passed);
  CHECK(report->measured.peak_bytes == report->predicted.peak_bytes);
}

TEST_CASE("verify: fp16 plan with accumulation passes within the fp16 bound", "[verify]") {
  const Graph graph = LoadFixture("tiny_mlp.onnx");
  VerifyPlan plan = PlanFor(graph, 4, 2);
  plan.program.precision = Precision::kFp16;
  VerifyOptions options;
  options.steps = 4;
  options.executor.optimizer.learning_rate = 1e-2;
  auto report = VerifyPlanOnBackend(graph, plan, Cpu(), options);
  if (!report.ok()) FAIL(report.error().message);
  CHECK(report->gradient.checked);
  CHECK(report->gradient.bound == 1e-2);
  CHECK(report->gradient.passed);
  CHECK(report->memory_passed);
  CHECK(report->passed);
}

TEST_CASE("verify: a plan above the memory limit is refused", "[verify]") {
  const Graph graph = LoadFixture("tiny_mlp.onnx");
  VerifyOptions options;
  options.max_memory_bytes = 1024;  // tiny_mlp's parameters alone are 676 * 4 = 2704 bytes
  auto report = VerifyPlanOnBackend(graph, PlanFor(graph, 4, 1), Cpu(), options);
  REQUIRE_FALSE(report.ok());
  CHECK(report.error().message.find("--max-cpu-memory") != std::string::npos);
}

TEST_CASE("verify: a tolerance below the measured excess fails the memory check", "[verify]") {
  // The measured peak equals the prediction, so a negative tolerance (measured must be below
  // predicted * 0.5) makes the check fail: the check is live.
  const Graph graph = LoadFixture("tiny_mlp.onnx");
  VerifyOptions options;
  options.tolerance = -0.5;
  options.check_gradient_equivalence = false;
  options.check_recompute_equivalence = false;
  auto report = VerifyPlanOnBackend(graph, PlanFor(graph, 4, 1), Cpu(), options);
  REQUIRE(report.ok());
  CHECK_FALSE(report->memory_passed);
  CHECK_FALSE(report->passed);
}

}  // namespace
}  // namespace memplan
