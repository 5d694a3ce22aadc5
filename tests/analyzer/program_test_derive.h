#pragma once
// Deriving a training program inside a test: the options most hand-derived byte counts assume and
// a derivation that fails the test unless the program derives and verifies.

#include <catch2/catch.hpp>

#include <utility>

#include "analyzer/program_derivation.h"
#include "analyzer/program_integrity.h"

namespace memplan::testing {

// A sum loss (it saves nothing) and plain SGD (no optimizer state): the options under which the
// tests' live-byte tables count only activations, parameters and gradients.
inline ProgramOptions SumLossSgd() {
  ProgramOptions options;
  options.loss = LossKind::kSum;
  options.optimizer = OptimizerKind::kSgd;
  return options;
}

inline TrainingProgram DeriveVerified(const Graph& graph, const ProgramOptions& options) {
  auto program = DeriveTrainingProgram(graph, options);
  REQUIRE(program.ok());
  REQUIRE(VerifyProgram(*program).ok());
  return std::move(program).value();
}

}  // namespace memplan::testing
