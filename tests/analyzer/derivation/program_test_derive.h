#pragma once
// Deriving a training program inside a test: the options most hand-derived byte counts assume and
// a derivation that fails the test unless the program derives and verifies.

#include <catch2/catch.hpp>

#include <utility>

#include "analyzer/derivation/program_derivation.h"
#include "analyzer/program/program_integrity.h"
#include "analyzer/simulation/exact_allocator.h"
#include "analyzer/simulation/simulator.h"

namespace memplan::testing {

// A sum loss (it saves nothing) and plain SGD (no optimizer state): the options under which the
// tests' live-byte tables count only activations, parameters and gradients.
inline ProgramOptions SumLossSgd() {
  ProgramOptions options;
  options.loss = LossKind::kSum;
  options.optimizer = OptimizerKind::kSgd;
  return options;
}

// A data-parallel group of `ranks` ranks under `strategy`, every other option at its default.
inline DataParallelOptions DataParallelGroup(ParallelStrategy strategy, int64_t ranks) {
  DataParallelOptions dp;
  dp.strategy = strategy;
  dp.ranks = ranks;
  return dp;
}

inline TrainingProgram DeriveVerified(const Graph& graph, const ProgramOptions& options) {
  auto program = DeriveTrainingProgram(graph, options);
  REQUIRE(program.ok());
  REQUIRE(VerifyProgram(*program).ok());
  return std::move(program).value();
}

// Replays `program` under `bindings` with the exact allocator, failing the test unless it
// simulates: the replay the tests read their byte counts from.
inline SimulationResult SimulateExactly(const TrainingProgram& program, const Bindings& bindings,
                                        const SimulationOptions& options = {}) {
  ExactAllocator exact;
  auto result = Simulate(program, bindings, exact, options);
  REQUIRE(result.ok());
  return std::move(result).value();
}

// The hand-built saved-bytes models: trained with loss = sum(y) (it saves nothing), fp32, the
// symbol `batch` bound to `batch`, replayed with the exact allocator.
inline SimulationResult SimulateSumLoss(const Graph& graph, int64_t batch = 2) {
  ProgramOptions options;
  options.loss = LossKind::kSum;
  auto program = DeriveTrainingProgram(graph, options);
  REQUIRE(program.ok());
  Bindings bindings(&program->symbols);
  bindings.Bind(*program->symbols.Find("batch"), batch);
  return SimulateExactly(*program, bindings);
}

}  // namespace memplan::testing
