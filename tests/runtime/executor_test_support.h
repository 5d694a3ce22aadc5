#pragma once
// Shared helpers of the executor tests: load a fixture, derive its program, run it on the CPU
// backend with synthetic data, and simulate the same program.

#include <catch2/catch.hpp>

#include <memory>
#include <string>
#include <vector>

#include "analyzer/derivation/program_derivation.h"
#include "analyzer/simulation/exact_allocator.h"
#include "analyzer/simulation/simulator.h"
#include "graph/onnx_import.h"
#include "runtime/cpu/cpu_backend.h"
#include "runtime/executor.h"
#include "runtime/verification.h"
#include "runtime/weight_init.h"
#include "tests/test_paths.h"

namespace memplan::testing {

inline Graph LoadFixture(const std::string& file) {
  auto graph = ImportOnnxModel(memplan::testing::FixturesDir() + "/" + file);
  MEMPLAN_CHECK(graph.ok());
  return std::move(*graph);
}

// Every symbol bound: the batch symbol to `batch`, the others (seq...) to `other`.
inline Bindings BindAllSymbols(const TrainingProgram& program, int64_t batch, int64_t other) {
  Bindings bindings(&program.symbols);
  for (SymbolId s = 0; s < static_cast<SymbolId>(program.symbols.size()); ++s)
    bindings.Bind(s, program.batch_symbol && *program.batch_symbol == s ? batch : other);
  return bindings;
}

// The graph's symbols bound but the batch symbol (a VerifyPlan binds that to its micro-batch):
// every other one (seq...) to `other`.
inline Bindings BindNonBatchSymbols(const Graph& graph, int64_t other) {
  Bindings bindings(&graph.symbols());
  for (SymbolId s = 0; s < static_cast<SymbolId>(graph.symbols().size()); ++s)
    if (!graph.batch_symbol() || *graph.batch_symbol() != s) bindings.Bind(s, other);
  return bindings;
}

// VerifyPlanOnBackend's backends: a fresh CPU backend each call.
inline BackendFactory CpuBackends() {
  return []() -> Expected<std::unique_ptr<Backend>> {
    return std::unique_ptr<Backend>(new CpuBackend());
  };
}

// k micro-batches of `rows` samples, the i-th optimizer step's (samples numbered on).
inline std::vector<MicroBatch> Batches(const SyntheticData& data, int64_t k, int64_t rows,
                                       int64_t step = 0) {
  std::vector<MicroBatch> batches;
  for (int64_t i = 0; i < k; ++i) {
    auto b = data.Batch((step * k + i) * rows, rows);
    MEMPLAN_CHECK(b.ok());
    batches.push_back(std::move(*b));
  }
  return batches;
}

// One micro-batch of `rows` seeded synthetic samples through `program` on the CPU backend (every
// other symbol bound to `other`), run with `options`: the gradient of every trained parameter.
inline Expected<std::vector<std::vector<float>>> OneMicroBatchGradients(
    const Graph& graph, const TrainingProgram& program, int64_t rows, uint64_t seed,
    int64_t other = 1, const ExecutorOptions& options = ExecutorOptions()) {
  const Bindings bindings = BindAllSymbols(program, rows, other);
  MEMPLAN_TRY(SyntheticData data, SyntheticData::Create(graph, program, bindings, seed));
  MEMPLAN_TRY(MicroBatch batch, data.Batch(0, rows));
  CpuBackend backend;
  MEMPLAN_TRY(std::unique_ptr<Executor> executor,
              Executor::Create(graph, program, bindings, backend, options));
  MEMPLAN_RETURN_IF_ERROR(executor->RunMicroBatch(batch));
  return executor->Gradients();
}

// The one parameter's gradient after one micro-batch of `rows` under an MSE loss: how the
// executor tests compare two models that compute the same thing two ways.
inline std::vector<float> OnlyParameterGradient(const Graph& graph, int64_t rows, uint64_t seed) {
  ProgramOptions options;
  options.loss = LossKind::kMse;
  auto program = DeriveTrainingProgram(graph, options);
  REQUIRE(program.ok());
  auto grads = OneMicroBatchGradients(graph, *program, rows, seed);
  if (!grads.ok()) FAIL(grads.error().message);
  REQUIRE(grads->size() == 1);
  return grads->front();
}

}  // namespace memplan::testing
