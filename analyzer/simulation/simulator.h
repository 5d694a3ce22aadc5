#pragma once
// The simulator: an abstract interpreter of a TrainingProgram. It evaluates every buffer's
// symbolic size once under the bindings, then walks the program (analyzer/program/program_walker.h:
// the walker owns the step loop, the Begin/End rule, the checks and the peak) with an allocator
// model plugged in, and records live bytes (exact, per category) and the model's allocated/reserved
// bytes.
//
// What is executed: setup once, then `iterations` optimizer steps, each = the micro-batch body k
// times followed by the optimizer phase. Two iterations are the default because the first step
// allocates optimizer states lazily and the second is the steady state (states live during
// forward and backward). Micro-batches 3..k start from exactly the same live set as micro-batch 2
// (the body frees everything it allocates, the persistent gradients are already live), so they
// are not replayed: their timeline equals micro-batch 2's. This is exact for the live-bytes peak;
// for the caching model it assumes the free-block layout after micro-batch 2 equals the one after
// micro-batch 1 (the same requests against the same segments), an approximation: a later
// micro-batch could in principle still grow the reserved bytes.
//
// The peak is the walker's: taken after each step's Begin (all of its allocations made, none of
// its frees), the step's high-water mark.

#include <cstdint>
#include <string>
#include <vector>

#include "analyzer/program/allocator_model.h"
#include "analyzer/program/memory_category.h"
#include "analyzer/program/program_walker.h"
#include "analyzer/program/training_program.h"
#include "graph/expected.h"
#include "graph/symbols.h"

namespace memplan {

struct SimulationOptions {
  // Micro-batches per optimizer step; 0 = the program's accumulation_steps.
  int64_t accumulation_steps = 0;
  // Optimizer steps replayed; 2 covers both the lazy first step and the steady state.
  int iterations = 2;
  // Record one TimelinePoint per executed step. The planner turns it off for speed.
  bool record_timeline = true;
  // Record the walker's event trace (every executed Alloc/Free) in SimulationResult::trace.
  bool record_trace = false;
  // The program's tape (analyzer/program/program_walker.h) when the caller replays it many times;
  // null: the walk builds one. REQUIRES: ProgramTape::Of(program) of the program simulated.
  const ProgramTape* tape = nullptr;
};

struct TimelinePoint {
  ExecutionPoint at;
  int64_t live_bytes = 0;  // exact, after Begin
  CategoryBytes by_category;
  int64_t allocated_bytes = 0;  // the model's, after Begin
  int64_t reserved_bytes = 0;
};

struct SimulationResult {
  std::string allocator;  // the model's name

  int64_t peak_bytes = 0;  // exact live bytes at the peak (the lower bound)
  ExecutionPoint peak_at;
  std::string peak_step_name;  // "backward MatMul_3", "optimizer"...
  CategoryBytes peak_breakdown;

  int64_t peak_allocated_bytes = 0;  // the model's (caching: rounded and unsplit blocks)
  int64_t peak_reserved_bytes = 0;   // the model's segments
  int64_t fragmentation_bytes = 0;   // peak_reserved_bytes - peak_bytes
  bool out_of_memory = false;        // the model refused an allocation (capacity exceeded)
  ExecutionPoint out_of_memory_at;

  // Bytes of held_for_backward buffers live at the End of the first micro-batch's loss step of
  // the last iteration (after the copies to the host that follow it, with --offload
  // activations): what one micro-batch's forward keeps for backward on the GPU.
  int64_t saved_activation_bytes = 0;
  int64_t persistent_bytes = 0;  // live on the GPU after the last iteration (parameters, ...)

  // Pinned host memory (--offload): its peak by the walker's rule and the breakdown there, the
  // saved tensors held on the host at the same point as saved_activation_bytes, and what stays
  // on the host after the last iteration. All 0 when the program keeps nothing on the host.
  int64_t host_peak_bytes = 0;
  CategoryBytes host_peak_breakdown;
  int64_t host_saved_activation_bytes = 0;
  int64_t host_persistent_bytes = 0;

  std::vector<int64_t> buffer_bytes;  // evaluated size of every buffer, by BufferId
  std::vector<TimelinePoint> timeline;
  int64_t num_allocations = 0;  // allocation events executed
  WalkTrace trace;              // when SimulationOptions::record_trace
};

// Replays `program` under `bindings`. Errors: an unbound symbol or overflow in a buffer size
// (naming the buffer), a negative size, or an inconsistent program (an alloc of a live buffer, a
// free of a dead one). Cost: linear in executed events; no allocation per step beyond the
// timeline.
Expected<SimulationResult> Simulate(const TrainingProgram& program, const Bindings& bindings,
                                    AllocatorModel& allocator,
                                    const SimulationOptions& options = {});

// Evaluated byte size of every buffer, by BufferId (what Simulate does first).
Expected<std::vector<int64_t>> EvaluateBufferSizes(const TrainingProgram& program,
                                                   const Bindings& bindings);

}  // namespace memplan
