// The runtime on issue 44's loss fixtures (tests/fixtures/make_loss_term_fixtures.py): a loss
// over two outputs runs as the sum of its terms, and the synthetic labels of logits transposed
// after the class axis take the class count from the class axis.

#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "tests/runtime/executor_test_support.h"

namespace memplan {
namespace {

using testing::BindAllSymbols;
using testing::LoadFixture;

struct Trained {
  double loss = 0.0;
  std::vector<std::vector<float>> gradients;  // by parameter name, see Gradient()
  std::vector<std::string> names;
  const std::vector<float>& Gradient(const std::string& name) const {
    const auto it = std::find(names.begin(), names.end(), name);
    MEMPLAN_CHECK(it != names.end()) << name;
    return gradients[static_cast<size_t>(it - names.begin())];
  }
};

// One micro-batch of 4 samples (seed 3) under `options`: its loss and parameter gradients.
Trained RunOnce(const Graph& graph, const ProgramOptions& options) {
  auto program = DeriveTrainingProgram(graph, options);
  REQUIRE(program.ok());
  const Bindings bindings = BindAllSymbols(*program, 4, 1);
  auto data = SyntheticData::Create(graph, *program, bindings, /*seed=*/3);
  REQUIRE(data.ok());
  CpuBackend backend;
  auto executor = Executor::Create(graph, *program, bindings, backend, ExecutorOptions{});
  if (!executor.ok()) FAIL(executor.error().message);
  Executor& ex = **executor;
  auto batch = data->Batch(0, 4);
  REQUIRE(batch.ok());
  REQUIRE(ex.RunMicroBatch(*batch).ok());
  Trained out;
  auto grads = ex.Gradients();
  REQUIRE(grads.ok());
  out.gradients = *grads;
  for (const ParameterBuffers& p : program->parameters)
    out.names.push_back(graph.value(p.value).name);
  auto record = ex.RunOptimizerPhase();
  REQUIRE(record.ok());
  out.loss = record->loss;
  return out;
}

TEST_CASE("executor: a loss over two outputs is the sum of its terms", "[executor]") {
  const Graph graph = LoadFixture("loss_terms/two_heads.onnx");
  ProgramOptions logits_only;
  logits_only.loss = LossKind::kCrossEntropy;
  logits_only.optimizer = OptimizerKind::kSgd;
  ProgramOptions both = logits_only;
  both.loss_outputs = {"logits", "boxes"};
  both.output_losses = {LossKind::kCrossEntropy, LossKind::kMse};
  const Trained one = RunOnce(graph, logits_only);
  const Trained two = RunOnce(graph, both);
  // The class head's weight gets its gradient from the class term alone: the same labels (term
  // 0 draws its teacher from the seed itself) and weights give the same gradient.
  const std::vector<float>& wc1 = one.Gradient("Wc");
  const std::vector<float>& wc2 = two.Gradient("Wc");
  REQUIRE(wc1.size() == wc2.size());
  for (size_t i = 0; i < wc1.size(); ++i) CHECK(wc2[i] == Approx(wc1[i]).margin(1e-7));
  // The box head trains only with its term: a gradient that is not all zero.
  const std::vector<float>& wb = two.Gradient("Wb");
  CHECK(std::any_of(wb.begin(), wb.end(), [](float v) { return v != 0.0f; }));
  // The step's loss adds the box term's mse (positive) to the class term's cross entropy.
  CHECK(two.loss > one.loss);
}

TEST_CASE("synthetic labels of [N, T, C] logits transposed to [N, C, T]", "[executor]") {
  const Graph graph = LoadFixture("loss_terms/transposed_logits.onnx");
  auto program = DeriveTrainingProgram(graph, ProgramOptions{});  // auto: cross entropy
  REQUIRE(program.ok());
  REQUIRE(program->loss_terms.size() == 1);
  CHECK(program->loss_terms[0].class_axis == 1);
  const Bindings bindings = BindAllSymbols(*program, 3, 1);
  auto data = SyntheticData::Create(graph, *program, bindings, /*seed=*/3);
  REQUIRE(data.ok());
  auto batch = data->Batch(0, 3);
  REQUIRE(batch.ok());
  // One class id per (sample, position): 3 samples x T = 6 positions, each below C = 5 (the
  // last dimension, T = 6, is not the class count).
  REQUIRE(batch->labels.size() == 1);
  const std::vector<float>& labels = batch->labels[0];
  CHECK(labels.size() == 18);
  for (float label : labels) {
    CHECK(label >= 0.0f);
    CHECK(label < 5.0f);
  }
  // The kernels read the classes at that axis: a step runs and its loss is finite.
  CpuBackend backend;
  auto executor = Executor::Create(graph, *program, bindings, backend, ExecutorOptions{});
  if (!executor.ok()) FAIL(executor.error().message);
  REQUIRE((*executor)->RunMicroBatch(*batch).ok());
  auto record = (*executor)->RunOptimizerPhase();
  REQUIRE(record.ok());
  CHECK(std::isfinite(record->loss));
}

}  // namespace
}  // namespace memplan
