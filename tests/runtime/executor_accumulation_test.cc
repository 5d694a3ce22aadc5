// The classic gradient-accumulation example through the whole executor: a hand-built graph whose
// training program DeriveTrainingProgram derives, interpreted on the CPU backend.

#include <catch2/catch.hpp>

#include "tests/graph/hand_built_graph.h"
#include "tests/runtime/executor_test_support.h"

namespace memplan {
namespace {

// x [batch, 1] (input), w [1, 1] (parameter), y = MatMul(x, w), mse loss against label [batch, 1].
struct OneWeightModel {
  OneWeightModel() {
    batch = graph.symbols().Intern("batch");
    graph.set_batch_symbol(batch);
    const Dim b = Dim::Symbol(batch);
    x = Add("x", {b, Dim(1)}, ValueKind::kInput);
    graph.MarkInput(x);
    w = Add("w", {Dim(1), Dim(1)}, ValueKind::kParameter);
    y = Add("y", {b, Dim(1)}, ValueKind::kIntermediate);
    testing::NewNode(graph, "matmul", "MatMul", {x, w}, {y});
    graph.MarkOutput(y);
  }
  ValueId Add(const std::string& name, std::vector<Dim> dims, ValueKind kind) {
    return testing::NewValue(graph, name, Shape{std::move(dims)}, kind);
  }
  Graph graph;
  SymbolId batch = 0;
  ValueId x, w, y;
};

// The model trained with mse loss and plain SGD, `accumulation_steps` micro-batches a step.
TrainingProgram MseSgdProgram(const OneWeightModel& model, int64_t accumulation_steps) {
  ProgramOptions options;
  options.loss = LossKind::kMse;
  options.optimizer = OptimizerKind::kSgd;
  options.accumulation_steps = accumulation_steps;
  auto program = DeriveTrainingProgram(model.graph, options);
  REQUIRE(program.ok());
  return std::move(program).value();
}

// The model, its program and the binding of `batch` rows a micro-batch: what every test here
// sets up. Not copyable: the bindings point into the program's symbols.
struct BoundMseSgd {
  BoundMseSgd(int64_t accumulation_steps, int64_t batch)
      : program(MseSgdProgram(model, accumulation_steps)), bindings(&program.symbols) {
    bindings.Bind(model.batch, batch);
  }
  BoundMseSgd(const BoundMseSgd&) = delete;
  BoundMseSgd& operator=(const BoundMseSgd&) = delete;

  OneWeightModel model;
  TrainingProgram program;
  Bindings bindings;
};

// An executor of `run` on `backend`, SGD at learning rate 0.01, starting from w = 1.
std::unique_ptr<Executor> SgdFromWOne(const BoundMseSgd& run, CpuBackend& backend) {
  ExecutorOptions eo;
  eo.optimizer.learning_rate = 0.01;
  auto executor = Executor::Create(run.model.graph, run.program, run.bindings, backend, eo);
  REQUIRE(executor.ok());
  REQUIRE((*executor)->SetParameterValues(0, {1.0f}).ok());
  return std::move(executor).value();
}

TEST_CASE("executor: accumulating [4] and [2] gives gradient -20 and weight 1.2", "[executor]") {
  // loss_i = (2x - w x)^2 (mse over one element), each divided by k = 2:
  //   d/dw at w = 1: ((-2 * 4 * (8 - 4)) + (-2 * 2 * (4 - 2))) / 2 = (-32 - 8) / 2 = -20;
  //   SGD, lr 0.01: w = 1 - 0.01 * (-20) = 1.2.
  const BoundMseSgd run(/*accumulation_steps=*/2, /*batch=*/1);
  CpuBackend backend;
  {
    const std::unique_ptr<Executor> executor = SgdFromWOne(run, backend);
    Executor& ex = *executor;
    REQUIRE(ex.RunMicroBatch(MicroBatch{{{4.0f}}, {{8.0f}}}).ok());
    REQUIRE(ex.RunMicroBatch(MicroBatch{{{2.0f}}, {{4.0f}}}).ok());
    auto grads = ex.Gradients();
    REQUIRE(grads.ok());
    REQUIRE(grads->size() == 1);
    REQUIRE((*grads)[0].size() == 1);
    CHECK((*grads)[0][0] == Approx(-20.0f));
    auto step = ex.RunOptimizerPhase();
    REQUIRE(step.ok());
    // Per-micro-batch losses before the 1/k: (8 - 4)^2 = 16 and (4 - 2)^2 = 4.
    REQUIRE(step->micro_batch_losses.size() == 2);
    CHECK(step->micro_batch_losses[0] == Approx(16.0));
    CHECK(step->micro_batch_losses[1] == Approx(4.0));
    CHECK_FALSE(step->skipped);
    auto w = ex.ParameterValues(0);
    REQUIRE(w.ok());
    CHECK((*w)[0] == Approx(1.2f));
    // set_to_none freed the gradient; the fp32 weight is what stays (SGD keeps no state).
    CHECK(backend.Memory().live_total == 4);
  }
  CHECK(backend.Memory().live_total == 0);
}

TEST_CASE("executor: one batch [4, 2] without accumulation gives the same step", "[executor]") {
  // mean over the batch of (2x - w x)^2 = ((8 - 4w)^2 + (4 - 2w)^2) / 2: the same -20 and 1.2.
  const BoundMseSgd run(/*accumulation_steps=*/1, /*batch=*/2);
  CpuBackend backend;
  const std::unique_ptr<Executor> executor = SgdFromWOne(run, backend);
  REQUIRE(executor->RunMicroBatch(MicroBatch{{{4.0f, 2.0f}}, {{8.0f, 4.0f}}}).ok());
  auto grads = executor->Gradients();
  REQUIRE(grads.ok());
  CHECK((*grads)[0][0] == Approx(-20.0f));
  REQUIRE(executor->RunOptimizerPhase().ok());
  CHECK((*executor->ParameterValues(0))[0] == Approx(1.2f));
}

}  // namespace
}  // namespace memplan
