#pragma once
// The mechanics shared by the passes that rewrite a derived program (analyzer/derivation/
// rank_sharding.h, host_offload.h): where the body uses each buffer, inserting steps around the
// existing ones, and bringing groups of parameters to the GPU around their uses. Each pass keeps
// its own memory model; this file owns only the bookkeeping, so the passes lay steps out and
// place fetches the same way.

#include <cstdint>
#include <functional>
#include <vector>

#include "analyzer/program/training_program.h"

namespace memplan {

// The memory events a rewrite attaches to the steps it inserts or extends. An allocation guarded
// kIfNotLive is made by the first micro-batch that reaches its step and then persists (shards,
// host gradients, lazily made buffers); the guard names the event's own buffer.
inline MemoryEvent RewriteEvent(MemoryEvent::Action action, BufferId b,
                                MemoryEvent::Guard guard = MemoryEvent::Guard::kNone) {
  MemoryEvent e;
  e.action = action;
  e.buffer = b;
  e.guard = guard;
  if (guard != MemoryEvent::Guard::kNone) e.guard_buffer = b;
  return e;
}
inline MemoryEvent AllocEvent(BufferId b) { return RewriteEvent(MemoryEvent::Action::kAlloc, b); }
inline MemoryEvent FreeEvent(BufferId b) { return RewriteEvent(MemoryEvent::Action::kFree, b); }
inline MemoryEvent AllocIfNotLiveEvent(BufferId b) {
  return RewriteEvent(MemoryEvent::Action::kAlloc, b, MemoryEvent::Guard::kIfNotLive);
}

// Where the micro-batch body names each buffer as an operand: inputs, outputs, cast sources and
// saved tensors, in step order (each step once), and per parameter the body step of its last
// gradient accumulation.
struct BodyUses {
  std::vector<std::vector<LogicalTime>> steps;  // per buffer
  std::vector<LogicalTime> last_accumulation;   // per parameter; -1 without one
};
BodyUses RecordBodyUses(const TrainingProgram& program);

// Steps to insert before or after the program's existing steps. Apply lays the steps out again
// and re-derives the phase ranges and the loss step, so every original step keeps its events and
// its order; an inserted step sits in the phase of the step it is attached to.
class StepInsertions {
 public:
  explicit StepInsertions(const TrainingProgram& program)
      : before_(program.steps.size()), after_(program.steps.size()) {}
  std::vector<Step>& Before(LogicalTime t) { return before_.at(static_cast<size_t>(t)); }
  std::vector<Step>& After(LogicalTime t) { return after_.at(static_cast<size_t>(t)); }
  // REQUIRES: `program` is the one this was made for, with no step added or removed since.
  void Apply(TrainingProgram& program);

 private:
  std::vector<std::vector<Step>> before_, after_;
};

// A group of parameter buffers brought to the GPU together (an FSDP unit, a ZeRO-3 module, a
// block offloaded to the host) and the body steps that need it there.
struct ParameterUnit {
  std::vector<BufferId> buffers;  // the full buffers the compute steps read
  std::vector<NodeId> nodes;      // the forward nodes that read them
  LogicalTime forward_first = -1, forward_last = -1;
  LogicalTime backward_first = -1, backward_last = -1;
  // Stays gathered from its forward to the end of its backward whatever reshard_after_forward
  // says: FSDP2's root unit (fully_shard sets the root's reshard_after_forward to False, since
  // backward would gather it again at once).
  bool keep_gathered = false;
};

// Fills `unit`'s nodes and spans from its buffers' uses: forward uses up to the loss, backward
// uses after it, and the backward steps of the nodes whose forward read the unit (the unit is
// needed for its whole backward).
void ComputeUnitSpan(const TrainingProgram& program, const BodyUses& uses, ParameterUnit& unit);

// Places the fetch steps of `units`: each unit is fetched `prefetch` units ahead of the one
// computing (forward order in forward, backward order in backward) and its buffers are freed at
// the End of its last use in the phase; with `reshard_after_forward` false they stay from the
// forward fetch to the end of the unit's backward and there is no backward fetch.
// `fetch(unit, backward)` makes the step that allocates the unit's buffers at its Begin.
void PlaceUnitFetches(TrainingProgram& program, const std::vector<ParameterUnit>& units,
                      int64_t prefetch, bool reshard_after_forward,
                      const std::function<Step(size_t unit, bool backward)>& fetch,
                      StepInsertions& insertions);

}  // namespace memplan
