#pragma once
// The model state a regime keeps, as totals over every parameter (JSON `model_state_bytes`):
// independent of where the peak falls, so a reader can check a regime's bytes per parameter
// (autocast Adam: 4 + 4 + 8 = 16; master weights: 2 + 4 + 2 + 8 = 16; pure bf16: 2 + 2 + 4 = 8).
// Gradients count once per parameter that has one (they live from the first backward to the
// optimizer step); optimizer state once per state buffer. A per-rank program's parameters name
// the rank's shards (analyzer/derivation/rank_sharding.h), so the same sums give bytes per rank.

#include <cstdint>
#include <vector>

#include "analyzer/program/training_program.h"

namespace memplan {

struct ModelStateBytes {
  int64_t parameters = 0;      // what the forward reads: the working copies under master weights
  int64_t master_weights = 0;  // the fp32 masters beside them (master-weights only)
  int64_t gradients = 0;
  int64_t optimizer_state = 0;
  int64_t total() const { return parameters + master_weights + gradients + optimizer_state; }
};

// REQUIRES: `buffer_bytes` has the evaluated size of every buffer of `program`
// (SimulationResult::buffer_bytes).
ModelStateBytes ModelStateBytesOf(const TrainingProgram& program,
                                  const std::vector<int64_t>& buffer_bytes);

}  // namespace memplan
