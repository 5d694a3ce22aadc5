#pragma once
// The bookkeeping under step emission: a TrainingProgram under construction plus, per buffer,
// the step that allocates it and the last step that uses it. Emission appends steps and buffers
// and records uses; the liveness pass (liveness.h) turns the recorded uses into frees.

#include <string>
#include <vector>

#include "analyzer/program/training_program.h"
#include "graph/graph.h"

namespace memplan {

// How one buffer is used by the steps emitted so far.
struct BufferUse {
  LogicalTime alloc = -1;      // the step whose Begin allocates it; -1: allocated by a guard
  LogicalTime last_use = -1;   // the last step that reads or writes it
  bool explicit_free = false;  // freed by a dedicated event, not by liveness
  // Kept through backward by a torch.utils.checkpoint frame (its arguments), not saved by
  // autograd: live across the loss like a saved tensor but not counted as one (checkpoint_
  // arguments.h), as torch's saved_tensors_hooks never see it.
  bool held_by_checkpoint = false;
};

class ProgramBuilder {
 public:
  explicit ProgramBuilder(const Graph& graph);

  TrainingProgram& program() { return program_; }
  const TrainingProgram& program() const { return program_; }
  const std::vector<BufferUse>& uses() const { return uses_; }
  TrainingProgram TakeProgram() { return std::move(program_); }

  // The time of the next step (steps are appended).
  LogicalTime Now() const { return static_cast<LogicalTime>(program_.steps.size()); }
  // The step being emitted (the last one).
  Step& current() { return program_.steps.back(); }

  // A buffer of `shape` x `dtype` bytes. Invalidates references into program().buffers.
  BufferId NewBuffer(std::string name, BufferRole role, MemoryCategory category, DType dtype,
                     Shape shape, ValueId value = ValueId(), NodeId node = NodeId(),
                     bool persistent = false);
  // Appends a step; a valid `node` names the op it runs. Invalidates references into steps.
  Step& NewStep(StepKind kind, std::string name, NodeId node = NodeId());

  // Allocates `b` at Begin of the current step.
  void AllocateHere(BufferId b);
  // Records a use of `b` by the current step (no-op for an invalid id).
  void Touch(BufferId b);
  // `b` is freed by an event emission writes itself; liveness leaves it alone.
  void MarkExplicitFree(BufferId b) { uses_[b.index()].explicit_free = true; }
  // `b` is a checkpoint frame's argument (BufferUse::held_by_checkpoint).
  void MarkHeldByCheckpoint(BufferId b) { uses_[b.index()].held_by_checkpoint = true; }

 private:
  const Graph& graph_;
  TrainingProgram program_;
  std::vector<BufferUse> uses_;  // indexed by BufferId
};

}  // namespace memplan
