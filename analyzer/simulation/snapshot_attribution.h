#pragma once
// `memplan explain SNAPSHOT MODEL.onnx`: which of memplan's program buffers each block of a
// PyTorch memory snapshot is, by matching the snapshot's allocations against memplan's
// allocation script for the same plan (docs/snapshots.md, "Attributing blocks to the program").
//
// The matching rule, by size, phase and order of allocation:
//  * the snapshot's allocations are taken in the order PyTorch made them: the blocks live when
//    the trace began first (in address order, as snapshot_replay.h reconstructs them), then every
//    alloc event up to the focus; each has a phase from its frames (snapshot_breakdown.h's rule):
//    parameters (module _apply) -> setup, torch/autograd/ -> backward, torch/optim/ ->
//    optimizer, other frames -> forward, no frames -> any phase;
//  * memplan's allocations are its walk's device Allocs in order (setup, then the iterations the
//    simulator runs: WalkTrace with SimulationOptions::record_trace), cut into segments (setup,
//    one per iteration), each with its step's phase (analyzer/program/step_phase.h: load and
//    forward -> forward, backward and recompute -> backward);
//  * a cursor moves through memplan's allocations: a snapshot allocation of R requested bytes
//    matches the first memplan allocation of exactly R bytes and the same phase at or after the
//    cursor and before the end of the cursor's segment, and the cursor moves past it; a match
//    never crosses an iteration;
//  * a forward allocation after a backward or optimizer one starts PyTorch's next iteration: the
//    cursor moves to the next segment (after memplan's last iteration, to that iteration's start
//    again: a longer run repeats the steady state); any allocation but a parameter's moves the
//    cursor out of the setup;
//  * an allocation with no match stays unattributed and leaves the cursor where it was (a
//    PyTorch request memplan does not model: a kernel's own scratch, a temporary of an op memplan
//    plans as one step).
// Equal sizes in one phase are told apart only by order: a PyTorch-only request of the size of a
// later buffer of the same phase takes that buffer's match, which the buffer then misses.

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "analyzer/program/memory_category.h"
#include "analyzer/program/program_walker.h"
#include "analyzer/program/training_program.h"
#include "analyzer/simulation/memory_snapshot.h"
#include "graph/expected.h"

namespace memplan {

// One block live at the focus, in allocation order, with what it was matched to.
struct AttributedBlock {
  int64_t address = 0;
  int64_t size = 0;  // requested bytes
  int64_t stream = 0;
  std::vector<int32_t> frames;
  // Index into the WalkTrace's events of the memplan Alloc it matched; nullopt: unattributed.
  std::optional<size_t> matched_event;
  BufferId buffer;                                   // valid when matched
  MemoryCategory category = MemoryCategory::kOther;  // the buffer's, when matched
  std::string step;  // the step that allocates the buffer ("forward MatMul_0"), when matched
};

struct SnapshotAttribution {
  int64_t snapshot_allocations = 0;  // allocations up to the focus (the pre-existing included)
  int64_t matched_allocations = 0;
  int64_t script_allocations = 0;     // memplan's device Allocs
  std::vector<AttributedBlock> live;  // live at the focus, in allocation order
  CategoryBytes attributed;           // the live matched blocks' requested bytes by category
  int64_t unattributed_bytes = 0;     // the live unmatched blocks' requested bytes
};

// Matches `snapshot`'s allocations up to `focus_event` (the blocks live after it; before it for
// an oom event, as BreakdownAt) against `trace`, a walk of `program`. Errors: a trace
// inconsistency (an alloc of a live address, a free of one that is not), as BreakdownAt's.
Expected<SnapshotAttribution> AttributeSnapshot(const MemorySnapshot& snapshot, int64_t focus_event,
                                                const TrainingProgram& program,
                                                const WalkTrace& trace);

}  // namespace memplan
