#pragma once
// The allocation script of a program: the sequence of device Alloc/Free requests a simulation
// feeds its allocator model, and the points where it samples the peaks, recorded once and
// replayed at any micro-batch.
//
// Why it is exact: which events execute depends only on what is live (guards, hand-overs), never
// on a buffer's size, so every simulation of one program under one schedule (the same
// accumulation steps and iterations) issues the same requests in the same order; only their
// bytes change with m. The planner's micro-batch search simulates one program at ~40 values of m
// and reads three numbers from each; replaying the script does the same allocator work without
// the walk around it (guards, hand-over bookkeeping, per-step listener calls, the leak scan at
// the end of every micro-batch), which was about half of each simulation.
//
//   Record:  one walk by the ProgramWalker (the simulator's checks: every Alloc/Free pair, the
//            leak check), its listener noting each device Alloc/Free and each peak sample
//   Replay:  for the sizes at m, the model gets the same Allocate/Free calls; the peaks are
//            sampled at the same points (after every Begin), by the same max rule
//
// An error of the walk (an inconsistent program) is an error of Record, as Simulate reports it.

#include <cstdint>
#include <optional>
#include <vector>

#include "analyzer/program/allocator_model.h"
#include "analyzer/program/program_walker.h"
#include "analyzer/program/training_program.h"
#include "graph/expected.h"

namespace memplan {

// What Simulate reports of these three, for the same sizes and schedule.
struct ScriptPeaks {
  int64_t live_bytes = 0;       // SimulationResult::peak_bytes (exact live bytes)
  int64_t allocated_bytes = 0;  // SimulationResult::peak_allocated_bytes (the model's)
  int64_t reserved_bytes = 0;   // SimulationResult::peak_reserved_bytes (the model's)
  // A model given a capacity refused an allocation (PyTorch's out-of-memory: the request did not
  // fit even after release_cached_blocks); never set for a model without one.
  bool refused = false;
};

class AllocationScript {
 public:
  // The schedule Simulate runs (analyzer/simulation/simulator.h): setup, then per iteration min(k,
  // 2) micro-batches and the optimizer phase. `tape`: ProgramTape::Of(program) or null. Errors as
  // Simulate's for these options (k < 1, iterations < 1, an inconsistent program).
  static Expected<AllocationScript> Record(const TrainingProgram& program,
                                           int64_t accumulation_steps, int iterations,
                                           const ProgramTape* tape = nullptr);

  // The peaks of the simulation at `buffer_bytes` (by BufferId) against `model` (reset first).
  // REQUIRES: buffer_bytes.size() == the recorded program's buffer count, every size >= 0.
  ScriptPeaks Replay(const std::vector<int64_t>& buffer_bytes, AllocatorModel& model) const;
  // Replay's peaks when they stay within the limits, nullopt from the first peak sample where
  // the model's reserved bytes exceed `reserved_limit` or the live bytes `live_limit`: the
  // peaks are maxima over the samples, so a sample past a limit decides that the whole replay
  // is, and the rest of it need not run (a fit test's failing probe stops where the peak
  // crosses the budget instead of running to the end).
  std::optional<ScriptPeaks> ReplayWithin(const std::vector<int64_t>& buffer_bytes,
                                          AllocatorModel& model, int64_t reserved_limit,
                                          int64_t live_limit) const;
  // Replay(buffer_bytes, model).live_bytes without a model (the exact live bytes only).
  int64_t LivePeak(const std::vector<int64_t>& buffer_bytes) const;

  size_t size() const { return ops_.size(); }

 private:
  // One entry per request: 2 * handle for an Alloc, 2 * handle + 1 for a Free; kSample where the
  // walker samples the peaks.
  static constexpr int64_t kSample = -1;
  std::vector<int64_t> ops_;
  size_t num_buffers_ = 0;
};

}  // namespace memplan
