#include "analyzer/simulator.h"

#include <algorithm>

namespace memplan {

Expected<std::vector<int64_t>> EvaluateBufferSizes(const TrainingProgram& program,
                                                   const Bindings& bindings) {
  std::vector<int64_t> sizes(program.buffers.size());
  for (const Buffer& b : program.buffers) {
    auto bytes = b.bytes.Evaluate(bindings);
    if (!bytes.ok()) return MakeError("size of buffer '" + b.name + "': " + bytes.error().message);
    if (*bytes < 0) {
      return MakeError("size of buffer '" + b.name + "' is negative (" + std::to_string(*bytes) +
                       " bytes); check the dimension bindings");
    }
    sizes[b.id.index()] = *bytes;
  }
  return sizes;
}

namespace {

// The mutable state of one replay; Simulate() is its facade.
class Replay {
 public:
  Replay(const TrainingProgram& program, AllocatorModel& allocator,
         const SimulationOptions& options, std::vector<int64_t> sizes)
      : program_(program), allocator_(allocator), options_(options) {
    result_.allocator = std::string(allocator.name());
    result_.buffer_bytes = std::move(sizes);
    live_.assign(program.buffers.size(), 0);
    categories_.reserve(program.buffers.size());
    for (const Buffer& b : program.buffers) categories_.push_back(static_cast<size_t>(b.category));
  }

  Expected<SimulationResult> Run() {
    allocator_.Reset();
    const int64_t k =
        options_.accumulation_steps > 0 ? options_.accumulation_steps : program_.accumulation_steps;
    if (k < 1) return MakeError("accumulation steps must be >= 1, got " + std::to_string(k));
    if (options_.iterations < 1) return MakeError("simulation needs at least one iteration");
    MEMPLAN_RETURN_IF_ERROR(RunRange(program_.setup, -1, -1));
    // Micro-batches after the second repeat the second exactly (see simulator.h).
    const int64_t replayed = std::min<int64_t>(k, 2);
    for (int it = 0; it < options_.iterations; ++it) {
      for (int64_t mb = 0; mb < replayed; ++mb) {
        MEMPLAN_RETURN_IF_ERROR(RunRange(program_.micro_batch, it, mb));
        for (size_t i = 0; i < live_.size(); ++i) {
          if (live_[i] && !program_.buffers[i].persistent) {
            return MakeError("program leaks buffer '" + program_.buffers[i].name +
                             "' past the end of a micro-batch");
          }
        }
      }
      MEMPLAN_RETURN_IF_ERROR(RunRange(program_.optimizer, it, -1));
    }
    result_.persistent_bytes = live_bytes_;
    result_.fragmentation_bytes = result_.peak_reserved_bytes - result_.peak_bytes;
    return std::move(result_);
  }

 private:
  Status RunRange(StepRange range, int iteration, int64_t micro_batch) {
    for (LogicalTime t = range.begin; t < range.end; ++t) {
      const Step& step = program_.steps[static_cast<size_t>(t)];
      ExecutionPoint at{t, iteration, micro_batch};
      for (const MemoryEvent& e : step.begin) MEMPLAN_RETURN_IF_ERROR(Apply(e, step, at));
      Record(step, at);
      for (const MemoryEvent& e : step.end) MEMPLAN_RETURN_IF_ERROR(Apply(e, step, at));
      if (t == program_.loss_step && micro_batch == 0 && iteration == options_.iterations - 1)
        result_.saved_activation_bytes = HeldForBackwardBytes();
    }
    return OkStatus();
  }

  Status Apply(const MemoryEvent& e, const Step& step, const ExecutionPoint& at) {
    if (e.guard != MemoryEvent::Guard::kNone) {
      bool guard_live = live_[e.guard_buffer.index()] != 0;
      if ((e.guard == MemoryEvent::Guard::kIfLive) != guard_live) return OkStatus();
    }
    const size_t b = e.buffer.index();
    const int64_t size = result_.buffer_bytes[b];
    if (e.action == MemoryEvent::Action::kAlloc) {
      if (live_[b]) return Inconsistent("allocates live buffer", step, e.buffer);
      live_[b] = 1;
      live_bytes_ += size;
      by_category_.bytes[categories_[b]] += size;
      ++result_.num_allocations;
      if (!allocator_.Allocate(static_cast<int64_t>(b), size) && !result_.out_of_memory) {
        result_.out_of_memory = true;
        result_.out_of_memory_at = at;
      }
    } else {
      if (!live_[b]) return Inconsistent("frees dead buffer", step, e.buffer);
      live_[b] = 0;
      live_bytes_ -= size;
      by_category_.bytes[categories_[b]] -= size;
      allocator_.Free(static_cast<int64_t>(b));
    }
    return OkStatus();
  }

  Error Inconsistent(const char* what, const Step& step, BufferId buffer) const {
    return MakeError("inconsistent training program: step '" +
                     std::string(StepKindName(step.kind)) + " " + step.name + "' " + what + " '" +
                     program_.buffer(buffer).name + "'");
  }

  void Record(const Step& step, const ExecutionPoint& at) {
    const int64_t allocated = allocator_.allocated_bytes();
    const int64_t reserved = allocator_.reserved_bytes();
    if (live_bytes_ > result_.peak_bytes || result_.peak_at.step < 0) {
      result_.peak_bytes = live_bytes_;
      result_.peak_at = at;
      result_.peak_step_name =
          std::string(StepKindName(step.kind)) + (step.name.empty() ? "" : " " + step.name);
      result_.peak_breakdown = by_category_;
    }
    result_.peak_allocated_bytes = std::max(result_.peak_allocated_bytes, allocated);
    result_.peak_reserved_bytes = std::max(result_.peak_reserved_bytes, reserved);
    if (options_.record_timeline)
      result_.timeline.push_back(TimelinePoint{at, live_bytes_, by_category_, allocated, reserved});
  }

  int64_t HeldForBackwardBytes() const {
    int64_t total = 0;
    for (size_t i = 0; i < live_.size(); ++i)
      if (live_[i] && program_.buffers[i].held_for_backward) total += result_.buffer_bytes[i];
    return total;
  }

  const TrainingProgram& program_;
  AllocatorModel& allocator_;
  const SimulationOptions& options_;
  SimulationResult result_;
  std::vector<uint8_t> live_;
  std::vector<size_t> categories_;
  int64_t live_bytes_ = 0;
  CategoryBytes by_category_;
};

}  // namespace

Expected<SimulationResult> Simulate(const TrainingProgram& program, const Bindings& bindings,
                                    AllocatorModel& allocator, const SimulationOptions& options) {
  MEMPLAN_TRY(std::vector<int64_t> sizes, EvaluateBufferSizes(program, bindings));
  Replay replay(program, allocator, options, std::move(sizes));
  return replay.Run();
}

}  // namespace memplan
