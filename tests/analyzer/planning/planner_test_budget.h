#pragma once
// The planner tests' model and budgets: a two-layer MLP whose peak grows with the batch, its exact
// peak simulated independently of the planner, and a GPU whose budget is exactly that peak.

#include <catch2/catch.hpp>

#include "analyzer/cost/gpu_specs.h"
#include "analyzer/derivation/program_derivation.h"
#include "analyzer/planning/planner.h"
#include "analyzer/simulation/exact_allocator.h"
#include "analyzer/simulation/simulator.h"
#include "tests/analyzer/derivation/program_test_graphs.h"

namespace memplan::testing {

// x[batch, 256] -> MatMul(W1[256, 512]) -> Relu -> MatMul(W2[512, 10]) -> logits: activations
// grow linearly with the batch, parameters do not, so the peak is strictly increasing in m.
inline TestGraph PlannerMlp() { return TwoLayerMlp(256, 512, 10); }

// The exact peak at micro-batch m and k, simulated independently of the planner.
inline int64_t ExactPeak(const Graph& graph, int64_t m, int64_t k = 1) {
  ProgramOptions options;
  TrainingProgram program = DeriveTrainingProgram(graph, options).value();
  Bindings bindings(&program.symbols);
  bindings.Bind(*program.batch_symbol, m);
  ExactAllocator exact;
  SimulationOptions sim;
  sim.accumulation_steps = k;
  return Simulate(program, bindings, exact, sim).value().peak_bytes;
}

// A GPU whose budget (memory - context) is exactly the peak at micro-batch `m` (k = `k`).
inline PlannerOptions OptionsFittingExactly(const Graph& graph, int64_t m, int64_t k = 1) {
  PlannerOptions options;
  options.gpu = ResolveGpu("24G").value();
  options.gpu.memory_bytes = options.gpu.context_bytes + ExactPeak(graph, m, k);
  options.allocator = AllocatorKind::kExact;
  return options;
}

}  // namespace memplan::testing
