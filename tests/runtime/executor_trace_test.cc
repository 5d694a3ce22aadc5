// The simulator and the CPU executor are two plug-ins of one ProgramWalker: on the same program
// they emit the same event trace (every Alloc/Free, its bytes, the live bytes after it), step by
// step, and the same peak. The simulator sizes buffers from their symbolic byte sizes, the
// executor from the shapes it evaluates and allocates, so equal traces say both agree on every
// buffer, not only at the peak.

#include <catch2/catch.hpp>

#include "tests/analyzer/derivation/program_test_derive.h"
#include "tests/analyzer/derivation/program_test_graphs.h"
#include "tests/runtime/executor_test_support.h"

namespace memplan {
namespace {

using testing::Batches;
using testing::BindAllSymbols;
using testing::LoadFixture;
using testing::TestGraph;

// Runs `steps` optimizer steps of k micro-batches on the CPU executor and simulates the same
// schedule (k <= 2: the simulator replays every micro-batch); returns both traces.
struct Traces {
  SimulationResult predicted;
  WalkTrace measured;
  MemoryMeasurement memory;
};

Traces RunBoth(const Graph& graph, const TrainingProgram& program, int64_t batch, int steps) {
  REQUIRE(program.accumulation_steps <= 2);
  const Bindings bindings = BindAllSymbols(program, batch, /*other=*/3);
  ExactAllocator exact;
  SimulationOptions sim;
  sim.iterations = steps;
  sim.record_trace = true;
  auto predicted = Simulate(program, bindings, exact, sim);
  REQUIRE(predicted.ok());

  CpuBackend backend;
  auto data = SyntheticData::Create(graph, program, bindings, /*seed=*/5);
  REQUIRE(data.ok());
  ExecutorOptions options;
  options.record_trace = true;
  auto executor = Executor::Create(graph, program, bindings, backend, options);
  if (!executor.ok()) FAIL(executor.error().message);
  for (int s = 0; s < steps; ++s) {
    auto record =
        (*executor)->RunOptimizerStep(Batches(*data, program.accumulation_steps, batch, s));
    if (!record.ok()) FAIL(record.error().message);
  }
  return Traces{std::move(*predicted), (*executor)->trace(), (*executor)->memory()};
}

void CheckSameTrace(const TrainingProgram& program, const Traces& t) {
  const std::vector<WalkEvent>& a = t.predicted.trace.events;
  const std::vector<WalkEvent>& b = t.measured.events;
  REQUIRE(!a.empty());
  CHECK(a.size() == b.size());
  for (size_t i = 0; i < std::min(a.size(), b.size()); ++i) {
    INFO("event " << i << ": simulator " << ToString(program, WalkTrace{{a[i]}}) << "executor "
                  << ToString(program, WalkTrace{{b[i]}}));
    REQUIRE(a[i] == b[i]);
  }
  CHECK(t.memory.peak_bytes == t.predicted.peak_bytes);
  CHECK(t.memory.peak_at.step == t.predicted.peak_at.step);
  CHECK(t.memory.peak_step_name == t.predicted.peak_step_name);
}

TEST_CASE("trace: linear + relu, simulator and executor step by step", "[executor][walker]") {
  TestGraph t = testing::LinearRelu();
  ProgramOptions options = testing::SumLossSgd();
  options.accumulation_steps = 2;
  auto program = DeriveTrainingProgram(t.graph, options);
  REQUIRE(program.ok());
  const Traces traces = RunBoth(t.graph, *program, /*batch=*/2, /*steps=*/2);
  CheckSameTrace(*program, traces);
  // By hand, batch 2, fp32: W = 4*3*4 = 48 B is allocated first (setup); the body's first event
  // loads x = 2*4*4 = 32 B (live 80), then mm's output y = 2*3*4 = 24 B (live 104).
  const std::vector<WalkEvent>& e = traces.measured.events;
  REQUIRE(e.size() >= 3);
  CHECK(program->buffer(e[0].buffer).name == "W");
  CHECK((e[0].bytes == 48 && e[0].live_bytes == 48));
  CHECK(program->buffer(e[1].buffer).name == "x");
  CHECK((e[1].bytes == 32 && e[1].live_bytes == 80));
  CHECK(program->buffer(e[2].buffer).name == "y");
  CHECK((e[2].bytes == 24 && e[2].live_bytes == 104));
}

TEST_CASE("trace: tiny_mlp with Adam, recompute, clipping and accumulation", "[executor][walker]") {
  const Graph graph = LoadFixture("tiny_mlp.onnx");
  for (bool recompute : {false, true}) {
    DYNAMIC_SECTION("recompute " << recompute) {
      ProgramOptions options;
      options.optimizer = OptimizerKind::kAdam;
      options.accumulation_steps = 2;
      options.clip_gradients = true;
      if (recompute)
        for (size_t n = 1; n < graph.num_nodes(); n += 2) options.recompute.push_back(NodeId(n));
      auto program = DeriveTrainingProgram(graph, options);
      REQUIRE(program.ok());
      CheckSameTrace(*program, RunBoth(graph, *program, /*batch=*/4, /*steps=*/2));
    }
  }
}

TEST_CASE("trace: tiny_resnet (BatchNorm extras, views) step by step", "[executor][walker]") {
  const Graph graph = LoadFixture("tiny_resnet.onnx");
  ProgramOptions options;
  options.optimizer = OptimizerKind::kMomentum;
  auto program = DeriveTrainingProgram(graph, options);
  REQUIRE(program.ok());
  CheckSameTrace(*program, RunBoth(graph, *program, /*batch=*/2, /*steps=*/2));
}

}  // namespace
}  // namespace memplan
