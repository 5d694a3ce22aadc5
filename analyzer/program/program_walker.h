#pragma once
// The one walk over a TrainingProgram (XLA's HeapSimulator is the model). The simulator
// (analyzer/simulation/simulator.h), the executor (runtime/executor.h) and the integrity check
// (analyzer/program/program_integrity.h) all run a program through a ProgramWalker; none of them
// owns a step loop. The walker owns:
//
//  * the order: setup once; per optimizer step the micro-batch body (as many times as the caller
//    asks) and the optimizer phase;
//  * the Begin/End rule of every step: its Begin events (allocations, guarded events evaluated
//    against what is live) run, then the step's work, then its End events (frees):
//
//        OnStepEnter  Begin: +out +workspace  OnStepBegun  RunStep  End: -dead inputs  OnStepEnded
//                                             ^ the peak is sampled here
//
//  * the integrity checks, each an error naming the step and the buffer: nothing allocated while
//    live, nothing freed while dead (no double free), nothing used by a step before it is made or
//    after it is freed, live bytes never negative, only persistent buffers live at the end of a
//    micro-batch, a storage hand-over only of storage the same Begin released;
//  * the peak rule: live bytes are sampled after each Begin (all of the step's allocations made,
//    none of its frees); a later step becomes the peak only when strictly larger;
//  * the memory spaces: live bytes, the peak, the breakdown and the allocator model are the
//    device's; buffers in pinned host memory (--offload, Buffer::space) are counted apart, by the
//    same rule (host_peak());
//  * an optional AllocatorModel (the strategy: exact live bytes, PyTorch's caching allocator) fed
//    the same Alloc/Free sequence, with its allocated/reserved peaks and the first refusal;
//  * an event trace: every executed Alloc/Free with its bytes and the live bytes after it, a value
//    tests compare between the simulator and the executor step by step.
//
// What differs between the interpreters plugs in through a WalkListener: the executor allocates
// device storage at OnAlloc, drops it at OnFree and runs kernels at RunStep; the simulator records
// its timeline at OnStepBegun. Byte sizes are given to the walker per buffer (the simulator's come
// from the symbolic sizes, the executor's from the evaluated shapes), so comparing two traces
// compares the two ways of sizing a buffer.

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "analyzer/program/allocator_model.h"
#include "analyzer/program/memory_category.h"
#include "analyzer/program/memory_stat.h"
#include "analyzer/program/training_program.h"
#include "graph/expected.h"

namespace memplan {

// Where in the execution a step ran.
struct ExecutionPoint {
  LogicalTime step = -1;     // index into TrainingProgram::steps
  int iteration = -1;        // optimizer step, 0-based; -1 for setup
  int64_t micro_batch = -1;  // 0-based within the iteration; -1 for setup and optimizer phase
};

// One executed allocation or free.
struct WalkEvent {
  enum class Kind : uint8_t { kAlloc, kFree };
  ExecutionPoint at;
  Kind kind = Kind::kAlloc;
  BufferId buffer;
  int64_t bytes = 0;
  int64_t live_bytes = 0;  // live program bytes after the event
};
bool operator==(const WalkEvent& a, const WalkEvent& b);

// Every executed event in order (XLA HeapSimulatorTrace).
struct WalkTrace {
  std::vector<WalkEvent> events;
};
// One event per line: "t5 mb0 +relu_out 48 live=112".
std::string ToString(const TrainingProgram& program, const WalkTrace& trace);

// The highest live bytes sampled after a Begin, and where.
struct WalkPeak {
  int64_t bytes = 0;
  ExecutionPoint at;
  std::string step_name;  // "backward MatMul_3", "optimizer_step adam"
  CategoryBytes breakdown;
};

// Live bytes as a concrete interpreter measures them (its instrumented allocator).
struct LiveSample {
  int64_t total = 0;
  CategoryBytes by_category;
};

// The interpreter-specific half of a walk. Every hook defaults to doing nothing.
class WalkListener {
 public:
  virtual ~WalkListener() = default;
  // Before the step's Begin events.
  virtual void OnStepEnter(const Step& step, const ExecutionPoint& at) {
    (void)step;
    (void)at;
  }
  // `buffer` became live. `storage_of` is valid when the program hands it the storage of a
  // buffer freed earlier in the same Begin (AccumulateGrad's steal): no new memory is obtained.
  virtual Status OnAlloc(BufferId buffer, BufferId storage_of) {
    (void)buffer;
    (void)storage_of;
    return OkStatus();
  }
  // `buffer` died. `handed_over`: a later event of the same Begin takes its storage.
  virtual void OnFree(BufferId buffer, bool handed_over) {
    (void)buffer;
    (void)handed_over;
  }
  // After the Begin events, before the step's work: the moment the peak is sampled.
  virtual void OnStepBegun(const Step& step, const ExecutionPoint& at) {
    (void)step;
    (void)at;
  }
  // What the interpreter's own allocator holds right now, sampled with the walker's live bytes
  // after every Begin so one peak rule yields both peaks (measured_peak()). nullopt: nothing
  // is measured (the simulator).
  virtual std::optional<LiveSample> MeasureLive() { return std::nullopt; }
  // The step's work (kernels); an error stops the walk and is reported with the step.
  virtual Status RunStep(const Step& step, const ExecutionPoint& at) {
    (void)step;
    (void)at;
    return OkStatus();
  }
  // After the step's End events.
  virtual void OnStepEnded(const Step& step, const ExecutionPoint& at) {
    (void)step;
    (void)at;
  }
};

// The program's memory events laid out for walking: every step's Begin and End events in one
// contiguous array, in step order, with each buffer's category. A walk touches only this (and
// the buffers' sizes) per event, not the steps' own event lists scattered over the heap, which
// on a large program costs a cache miss per step. Built once per program: the planner shares one
// tape between the many simulations of a program (WalkOptions::tape); a walker without one
// builds its own.
struct ProgramTape {
  struct StepEvents {
    uint32_t begin = 0;  // [begin, end_first): the step's Begin events in `events`
    uint32_t end_first = 0;
    uint32_t end_last = 0;    // [end_first, end_last): its End events
    bool hands_over = false;  // a Begin event takes over freed storage
  };
  std::vector<MemoryEvent> events;
  std::vector<StepEvents> steps;  // by LogicalTime
  std::vector<uint8_t> category;  // per buffer: its MemoryCategory
  std::vector<uint8_t> host;      // per buffer: 1 when it lives in host memory

  static ProgramTape Of(const TrainingProgram& program);
};

struct WalkOptions {
  // Append every executed Alloc/Free to trace(). Off by default: the planner walks programs many
  // times and needs only the peak.
  bool record_trace = false;
  // Check that every buffer a step names (operands, casts, saved tensors, gradients, workspace)
  // is live between its Begin and End.
  bool check_operands = true;
  // The program's tape, when the caller keeps one for many walks; null: the walker builds it.
  // REQUIRES: ProgramTape::Of(program) of this very program, outliving the walker.
  const ProgramTape* tape = nullptr;
};

class ProgramWalker {
 public:
  // `buffer_bytes`: the size of every buffer, by BufferId. `model` and `listener` may be null.
  // REQUIRES: program, model and listener outlive the walker; buffer_bytes.size() ==
  // program.buffers.size(), every size >= 0.
  ProgramWalker(const TrainingProgram& program, std::vector<int64_t> buffer_bytes,
                AllocatorModel* model, WalkListener* listener, WalkOptions options = {});

  // The three phases. The caller owns the schedule (how many micro-batches, how many optimizer
  // steps); the walker owns everything inside a phase.
  Status RunSetup();
  // Also checks that only persistent buffers are live at its end.
  Status RunMicroBatch(int iteration, int64_t micro_batch);
  Status RunOptimizerPhase(int iteration);

  // Only persistent buffers are live (what must hold at the end of a micro-batch and of a run).
  Status CheckOnlyPersistentLive(const char* when) const;

  bool live(BufferId b) const { return live_[b.index()] != 0; }
  int64_t bytes(BufferId b) const { return bytes_[b.index()]; }
  const std::vector<int64_t>& buffer_bytes() const { return bytes_; }
  const MemoryStat& live_stat() const { return live_stat_; }  // exact live program bytes
  const CategoryBytes& live_by_category() const { return by_category_; }
  // Pinned host memory (--offload): live bytes now and the peak, sampled after each Begin as the
  // device peak is; empty (bytes 0, at.step < 0) when the program keeps nothing on the host.
  const MemoryStat& host_stat() const { return host_stat_; }
  const WalkPeak& host_peak() const { return Named(host_peak_); }
  // Empty (at.step < 0) before the first step.
  const WalkPeak& peak() const { return Named(peak_); }
  // The same rule over the listener's MeasureLive() samples; empty when it measures nothing.
  const WalkPeak& measured_peak() const { return Named(measured_peak_); }
  int64_t num_allocations() const { return num_allocations_; }
  // The model's peaks, sampled with the live peak after every Begin (0 without a model).
  int64_t model_peak_allocated_bytes() const { return model_peak_allocated_; }
  int64_t model_peak_reserved_bytes() const { return model_peak_reserved_; }
  // The first allocation the model refused (capacity exceeded); at.step < 0 when none.
  bool out_of_memory() const { return out_of_memory_at_.step >= 0; }
  const ExecutionPoint& out_of_memory_at() const { return out_of_memory_at_; }
  const WalkTrace& trace() const { return trace_; }

 private:
  Status RunRange(StepRange range, int iteration, int64_t micro_batch);
  // Event `index` of the step's events [first, last) on the tape; `in_begin`: of its Begin.
  Status Apply(const Step& step, bool in_begin, size_t index, size_t last,
               const ExecutionPoint& at);
  Status CheckOperands(const Step& step) const;
  void SamplePeak(const ExecutionPoint& at);
  static void UpdatePeak(WalkPeak& peak, const LiveSample& sample, const ExecutionPoint& at);
  // `peak` with its step_name written: the walk records only where a peak is (a chain's forward
  // raises the peak at every step), the name is formatted when asked for.
  const WalkPeak& Named(WalkPeak& peak) const;
  void Trace(WalkEvent::Kind kind, BufferId b, const ExecutionPoint& at);
  std::string Where(const Step& step) const;
  Error Inconsistent(const Step& step, const std::string& what) const;

  const TrainingProgram& program_;
  std::vector<int64_t> bytes_;
  AllocatorModel* model_;
  WalkListener* listener_;
  WalkOptions options_;

  std::vector<uint8_t> live_;
  std::optional<ProgramTape> own_tape_;  // when WalkOptions::tape is null
  const ProgramTape* tape_ = nullptr;
  MemoryStat live_stat_;
  CategoryBytes by_category_;
  MemoryStat host_stat_;
  CategoryBytes host_by_category_;
  mutable WalkPeak host_peak_;
  mutable WalkPeak peak_;  // step_name written by Named()
  mutable WalkPeak measured_peak_;
  int64_t num_allocations_ = 0;
  int64_t model_peak_allocated_ = 0;
  int64_t model_peak_reserved_ = 0;
  ExecutionPoint out_of_memory_at_;
  // Buffers whose storage the current Begin released for a later event of it to take.
  std::vector<BufferId> handed_over_;
  WalkTrace trace_;
};

}  // namespace memplan
