// The CPU runtime executes fine-tuning plans: frozen parameters get no gradient and keep their
// values, LoRA adapters train, 8-bit AdamW runs with its block quantisation and Lion trains, and
// `verify` (VerifyPlanOnBackend) passes each: measured memory equals the prediction, gradients of
// accumulated micro-batches equal the full batch's, the loss falls.

#include <catch2/catch.hpp>
#include <cmath>

#include "graph/fine_tuning.h"
#include "runtime/optimizers.h"
#include "runtime/verification.h"
#include "tests/runtime/executor_test_support.h"

namespace memplan {
namespace {

using testing::Batches;
using testing::BindAllSymbols;
using testing::LoadFixture;

// Micro-batch 2, accumulation 2, every other symbol (seq) 8.
VerifyPlan SmallPlan(const Graph& graph, OptimizerKind optimizer) {
  VerifyPlan plan;
  plan.micro_batch = 2;
  plan.program.accumulation_steps = 2;
  plan.program.optimizer = optimizer;
  plan.bindings = testing::BindNonBatchSymbols(graph, 8);
  return plan;
}

void CheckVerifies(const Graph& graph, const VerifyPlan& plan, double learning_rate = 1e-3) {
  VerifyOptions options;
  options.executor.optimizer.learning_rate = learning_rate;
  auto report = VerifyPlanOnBackend(graph, plan, testing::CpuBackends(), options);
  if (!report.ok()) FAIL(report.error().message);
  CHECK(report->measured.peak_bytes == report->predicted.peak_bytes);
  CHECK(report->memory_passed);
  CHECK(report->gradient.passed);
  CHECK(report->loss_decreased == std::optional<bool>(true));
  CHECK(report->passed);
}

TEST_CASE("runtime: a frozen GPT stem gets no gradient, keeps its values, the rest trains",
          "[executor][finetune]") {
  Graph graph = LoadFixture("gpt_opset17.onnx");
  FineTuneOptions ft;
  ft.selection.freeze = "^(tok|pos|blocks\\.0)\\.";
  REQUIRE(ApplyFineTuning(graph, ft).ok());

  ProgramOptions options;
  options.optimizer = OptimizerKind::kAdam;
  options.loss = LossKind::kCrossEntropy;
  auto program = DeriveTrainingProgram(graph, options);
  REQUIRE(program.ok());
  const Bindings bindings = BindAllSymbols(*program, 2, 8);
  auto data = SyntheticData::Create(graph, *program, bindings, /*seed=*/3);
  REQUIRE(data.ok());
  CpuBackend backend;
  auto executor = Executor::Create(graph, *program, bindings, backend);
  if (!executor.ok()) FAIL(executor.error().message);
  Executor& ex = **executor;
  std::vector<std::vector<float>> before;
  for (size_t i = 0; i < program->parameters.size(); ++i)
    before.push_back(*ex.ParameterValues(static_cast<int>(i)));
  const std::vector<MicroBatch> batches = Batches(*data, ex.accumulation_steps(), 2);
  for (const MicroBatch& b : batches) REQUIRE(ex.RunMicroBatch(b).ok());
  auto gradients = ex.Gradients();
  REQUIRE(gradients.ok());
  REQUIRE(ex.RunOptimizerPhase().ok());

  int frozen = 0, trained = 0;
  for (size_t i = 0; i < program->parameters.size(); ++i) {
    const Value& v = graph.value(program->parameters[i].value);
    if (!v.trainable) continue;  // the causal masks
    const std::vector<float> after = *ex.ParameterValues(static_cast<int>(i));
    INFO(v.name);
    if (v.frozen) {
      ++frozen;
      CHECK((*gradients)[i].empty());  // no gradient buffer at all
      CHECK(program->parameters[i].optimizer_states.empty());
      CHECK(after == before[i]);  // untouched by the step
    } else {
      ++trained;
      CHECK(!(*gradients)[i].empty());
      CHECK(program->parameters[i].optimizer_states.size() == 2);
      CHECK(after != before[i]);
    }
  }
  // tok, pos and block 0's 12 tensors (2 LayerNorms x 2, qkv/proj/mlp.0/mlp.2 weight + bias).
  CHECK(frozen == 2 + 12);
  CHECK(trained == 12 + 2 + 1);  // block 1, ln_f, head

  CheckVerifies(graph, SmallPlan(graph, OptimizerKind::kAdam));
}

TEST_CASE("runtime: LoRA adapters on GPT's attention train and verify", "[executor][finetune]") {
  Graph graph = LoadFixture("gpt_opset17.onnx");
  FineTuneOptions ft;
  ft.lora = LoraOptions{/*rank=*/4, /*targets=*/"attn\\.(qkv|proj)\\.weight", true};
  REQUIRE(ApplyFineTuning(graph, ft).ok());
  // qkv: 4 * (64 + 192) = 1024, proj: 4 * (64 + 64) = 512, two blocks: 3072 trained elements.
  CHECK(TrainedParameterCount(graph) == 3072);
  CheckVerifies(graph, SmallPlan(graph, OptimizerKind::kAdamW), /*learning_rate=*/1e-2);
}

TEST_CASE("runtime: 8-bit AdamW and Lion train a transformer and verify", "[executor][finetune]") {
  const Graph graph = LoadFixture("transformer_opset17.onnx");
  CheckVerifies(graph, SmallPlan(graph, OptimizerKind::kAdamW8bit));
  CheckVerifies(graph, SmallPlan(graph, OptimizerKind::kPagedAdamW8bit));
  CheckVerifies(graph, SmallPlan(graph, OptimizerKind::kLion), /*learning_rate=*/1e-4);
}

TEST_CASE("8-bit AdamW stays close to fp32 AdamW and keeps 1 byte per moment element",
          "[optimizer][finetune]") {
  // 5000 elements (>= 4096: 8-bit), three blocks of 2048 (the last 904 long).
  const int64_t n = 5000;
  std::vector<float> init(n), grad(n);
  for (int64_t i = 0; i < n; ++i) {
    init[static_cast<size_t>(i)] = std::sin(0.01f * static_cast<float>(i));
    grad[static_cast<size_t>(i)] = std::cos(0.37f * static_cast<float>(i)) * (1.0f + i % 7);
  }
  auto run = [&](OptimizerKind kind, int64_t* state_bytes) {
    CountingCpuAllocator allocator;
    OptimizerOptions options;
    options.kind = kind;
    options.learning_rate = 1e-2;
    Tensor p = Tensor::FromValues({n}, init);
    OptimizerState state = CreateOptimizerState(options, p, allocator);
    *state_bytes = allocator.live_bytes()[MemoryCategory::kOptimizerState];
    for (int step = 0; step < 3; ++step)
      REQUIRE(ApplyOptimizerStep(options, Tensor::FromValues({n}, grad), p, state).ok());
    return p.ToVector();
  };
  int64_t bytes32 = 0, bytes8 = 0;
  const std::vector<float> full = run(OptimizerKind::kAdamW, &bytes32);
  const std::vector<float> eight = run(OptimizerKind::kAdamW8bit, &bytes8);
  CHECK(bytes32 == 2 * n * 4);         // 40000
  CHECK(bytes8 == 2 * n + 2 * 3 * 4);  // uint8 moments 10000 + 3 fp32 absmax each: 10024
  double max_diff = 0.0, sum_diff = 0.0;
  for (int64_t i = 0; i < n; ++i) {
    const size_t k = static_cast<size_t>(i);
    const double d = std::fabs(static_cast<double>(full[k] - eight[k]));
    max_diff = std::max(max_diff, d);
    sum_diff += d;
  }
  // Three steps of lr 1e-2 move each element by about 3e-2 in either run. The dynamic code keeps
  // a few per cent of relative precision on moments far below the block's absmax (8 codes per
  // decade around 1e-3 of it), so an element's path differs by at most a third of its movement and
  // on average by much less.
  INFO("max " << max_diff << " mean " << sum_diff / n);
  CHECK(max_diff > 0.0);
  CHECK(max_diff < 1e-2);
  CHECK(sum_diff / n < 5e-4);
}

}  // namespace
}  // namespace memplan
