#pragma once
// An abstract chain of L stages: the model the recompute planners reason about (what Rotor,
// Beaumont et al. 2019, calls a "heterogeneous chain"; Chen et al. 2016 use the same picture with
// homogeneous stages). A real graph is reduced to a chain by DecomposeIntoChain
// (chain_decomposition.h); the planners never see the graph.
//
// Notation (0-based stages k = 0..L-1, as in `Chain::stages`):
//
//   a_in ──F_0──► a_0 ──F_1──► a_1 ── … ──F_{L-1}──► a_{L-1} ─► (loss)
//   d_in ◄─B_0─── d_0 ◄─B_1─── d_1 ◄─ … ◄─B_{L-1}─── d_{L-1} ◄─ (loss gradient)
//
//   a_k     the output activation of stage k: `output_bytes`. It is all that must be kept to
//           restart the forward pass at stage k+1. a_in is the chain input (`input_bytes`).
//   d_k     the gradient of a_k; same size as a_k. The chain input gets no gradient (it is data):
//           B_0 produces nothing.
//   abar_k  what backward of stage k needs beyond its input a_{k-1}, when stage k's forward ran
//           "storing" (F^all): its output a_k plus `saved_bytes` of internal saved tensors.
//           |abar_k| = output_bytes + saved_bytes.
//
// Operations (all memory counts are on top of what the schedule already holds):
//
//   F^none_k  forward without storing: reads a_{k-1}, writes a_k; peak a_k + forward_overhead.
//   F^all_k   forward storing:         reads a_{k-1}, writes abar_k; peak abar_k +
//   forward_overhead. B_k       backward: reads d_k, abar_k, a_{k-1}; writes d_{k-1}; peak d_{k-1}
//   +
//             backward_overhead; afterwards d_k and abar_k are freed.
//
//   memory during B_k:
//   ┌──────────────┬─────────┬───────┬──────────┬───────────────────┐
//   │ held before  │ abar_k  │  d_k  │ d_{k-1}  │ backward_overhead │
//   │ (incl a_k-1) │         │       │ (new)    │ (transient)       │
//   └──────────────┴─────────┴───────┴──────────┴───────────────────┘
//
// Sizes are bytes for the current bindings (micro-batch, precision); times are seconds (any unit
// works as long as it is the same for every stage).

#include <cstdint>
#include <string>
#include <vector>

#include "graph/expected.h"

namespace memplan {

struct ChainStage {
  std::string name;                     // for reports: e.g. the ONNX name of the stage's last node
  double forward_time = 0;              // one forward of the stage (F^none and F^all cost the same)
  double backward_time = 0;             // its backward B_k
  int64_t output_bytes = 0;             // |a_k|, and |d_k|
  int64_t saved_bytes = 0;              // |abar_k| - |a_k|: internal tensors F^all keeps for B_k
  int64_t forward_overhead_bytes = 0;   // transient bytes during F_k beyond its input and outputs
  int64_t backward_overhead_bytes = 0;  // transient bytes during B_k beyond the terms above
};

struct Chain {
  int64_t input_bytes = 0;  // |a_in|: held by the chain for the whole step
  std::vector<ChainStage> stages;

  int num_stages() const { return static_cast<int>(stages.size()); }
  // |a_{k-1}|: the input of stage k (the chain input for k = 0).
  int64_t InputBytesOf(int k) const;
  // |d_{k-1}|: what B_k writes (0 for k = 0: the chain input gets no gradient).
  int64_t InputGradientBytesOf(int k) const;
  // |abar_k| = output_bytes + saved_bytes.
  int64_t StoredBytesOf(int k) const;
};

// Errors name the first stage with a negative size or time, or an empty chain.
Status ValidateChain(const Chain& chain);

}  // namespace memplan
