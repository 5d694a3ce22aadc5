#pragma once
// The executor's device storage of a TrainingProgram's buffers and of the graph values they hold.
// A buffer is live exactly while it has storage here: the executor allocates it at the walker's
// Alloc event and drops its only handle at the Free event, so the backend's counting allocator
// follows the program. Values are read *through* buffers: a buffer holds a value (its forward
// output, a cast copy, its recomputed copy), possibly seen with another shape, and a view op's
// value is the tensor its kernel returned, kept while its base buffer lives.

#include <cstdint>
#include <map>
#include <vector>

#include "analyzer/program/training_program.h"
#include "graph/expected.h"
#include "graph/graph.h"
#include "graph/symbols.h"
#include "runtime/backend.h"

namespace memplan {

class ProgramBuffers {
 public:
  // REQUIRES: graph, program and backend outlive this.
  ProgramBuffers(const Graph& graph, const TrainingProgram& program, Backend& backend);
  ~ProgramBuffers();  // drops every handle (before the backend checks for leaks)
  ProgramBuffers(const ProgramBuffers&) = delete;
  ProgramBuffers& operator=(const ProgramBuffers&) = delete;

  // Evaluates every buffer's shape under `bindings` and indexes which buffer each forward and
  // recompute step writes for each value. Errors: an unbound symbol (naming the buffer).
  Status Init(const Bindings& bindings);
  // Device bytes of every buffer (elements x dtype size), by BufferId: what the walker counts.
  std::vector<int64_t> AccountedBytes() const;

  // The walker's Alloc: fresh zeroed storage, or the storage `storage_of` handed over at the
  // same Begin (AccumulateGrad's steal). Errors: the device is out of memory.
  Status Allocate(BufferId b, BufferId storage_of);
  // The walker's Free. A handed-over storage is kept until the Allocate that takes it.
  void Release(BufferId b, bool handed_over);
  // Storage handed over and not taken is dropped at the end of a Begin.
  void DropHandedOver() { handed_over_.clear(); }

  bool Live(BufferId b) const { return buffers_[b.index()].defined(); }
  const DeviceTensor& Get(BufferId b) const { return buffers_[b.index()]; }
  const TensorShape& shape(BufferId b) const { return shapes_[b.index()]; }

  // The shape value `u` had when it was last produced (empty before).
  const TensorShape& value_shape(ValueId u) const { return value_shape_[u.index()]; }
  void set_value_shape(ValueId u, TensorShape shape) { value_shape_[u.index()] = std::move(shape); }
  // Value `u` read through buffer `b` (its storage, a cast or recomputed copy, a view's base),
  // seen with u's shape. Errors: b is not live, or u's shape does not fit b.
  Expected<DeviceTensor> ValueThrough(ValueId u, BufferId b) const;
  // Does buffer b hold value u (its storage, a cast of it, its recomputed copy, a view's base)?
  bool Holds(BufferId b, ValueId u) const;
  // The view value `u` a forward (or recompute) kernel returned over `base`.
  void RecordView(StepKind kind, ValueId u, DeviceTensor tensor, BufferId base);
  // The forward step of each node (-1: none).
  LogicalTime forward_step(NodeId n) const { return forward_step_[n.index()]; }

 private:
  struct ViewValue {
    DeviceTensor tensor;
    BufferId base;  // the buffer the view aliases; the view is dropped when it is freed
  };
  void DropViewsOf(BufferId base, const DeviceStorage* storage);

  const Graph& g_;
  const TrainingProgram& p_;
  Backend& backend_;
  std::vector<TensorShape> shapes_;    // evaluated shape of every buffer
  std::vector<DeviceTensor> buffers_;  // defined = live
  std::vector<TensorShape> value_shape_;
  std::vector<BufferId> forward_buffer_;          // per value: the buffer its forward step wrote
  std::vector<BufferId> recomputed_buffer_;       // per value: the buffer its recompute wrote
  std::vector<LogicalTime> forward_step_;         // per node
  std::map<size_t, ViewValue> forward_views_;     // per view value: its forward kernel's result
  std::map<size_t, ViewValue> recomputed_views_;  // per view value: its recompute's result
  std::map<size_t, DeviceTensor> handed_over_;    // by buffer index, within one Begin
};

}  // namespace memplan
