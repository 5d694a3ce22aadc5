#include "analyzer/simulation/simulator.h"

#include <algorithm>

#include "analyzer/simulation/batch_linear_sizes.h"
#include "graph/checked_math.h"

namespace memplan {

Status CheckBufferSize(const Buffer& b, const Expected<int64_t>& bytes, int64_t& total) {
  // 4 EiB: far above any GPU, and leaves 2^62 of headroom for rounding and reserve sums.
  constexpr int64_t kMaxTotalBufferBytes = int64_t{1} << 62;
  if (!bytes.ok()) return MakeError("size of buffer '" + b.name + "': " + bytes.error().message);
  if (*bytes < 0) {
    return MakeError("size of buffer '" + b.name + "' is negative (" + std::to_string(*bytes) +
                     " bytes); check the dimension bindings");
  }
  // Every live, category and allocator sum is at most the total of all buffers (plus the
  // caching allocator's rounding), so one checked total keeps them all from overflowing.
  auto next = CheckedAdd(total, *bytes);
  if (!next || *next > kMaxTotalBufferBytes) {
    return MakeError("the program's buffers total more than 2^62 bytes (buffer '" + b.name +
                     "' is " + std::to_string(*bytes) + " bytes); check the dimension bindings");
  }
  total = *next;
  return OkStatus();
}

Expected<std::vector<int64_t>> EvaluateBufferSizes(const TrainingProgram& program,
                                                   const Bindings& bindings) {
  std::vector<int64_t> sizes(program.buffers.size());
  int64_t total = 0;
  for (const Buffer& b : program.buffers) {
    Expected<int64_t> bytes = b.bytes.Evaluate(bindings);
    MEMPLAN_RETURN_IF_ERROR(CheckBufferSize(b, bytes, total));
    sizes[b.id.index()] = *bytes;
  }
  return sizes;
}

namespace {

// The simulator's half of the walk: the timeline and the saved-activation sample. Simulate() is
// its facade; the walker does everything else.
class Replay final : public WalkListener {
 public:
  Replay(const TrainingProgram& program, AllocatorModel& allocator,
         const SimulationOptions& options, std::vector<int64_t> sizes)
      : program_(program),
        allocator_(allocator),
        options_(options),
        // Operands are checked by VerifyProgram after every derivation (tests, debug builds);
        // the planner replays a program many times and needs only the event checks here.
        walker_(program, std::move(sizes), &allocator, this,
                WalkOptions{/*record_trace=*/options.record_trace, /*check_operands=*/false,
                            /*tape=*/options.tape}) {}

  Expected<SimulationResult> Run() {
    const int64_t k =
        options_.accumulation_steps > 0 ? options_.accumulation_steps : program_.accumulation_steps;
    if (k < 1) return MakeError("accumulation steps must be >= 1, got " + std::to_string(k));
    if (options_.iterations < 1) return MakeError("simulation needs at least one iteration");
    // Micro-batches after the second repeat the second exactly (see simulator.h).
    const int64_t replayed = std::min<int64_t>(k, 2);
    if (options_.record_timeline) {
      // One point per executed step, known up front: a point is ~100 bytes and a large program
      // executes hundreds of thousands of steps, which growing the vector copied twice over.
      result_.timeline.reserve(static_cast<size_t>(
          program_.setup.size() + options_.iterations * (replayed * program_.micro_batch.size() +
                                                         program_.optimizer.size())));
    }
    MEMPLAN_RETURN_IF_ERROR(walker_.RunSetup());
    for (int it = 0; it < options_.iterations; ++it) {
      for (int64_t mb = 0; mb < replayed; ++mb)
        MEMPLAN_RETURN_IF_ERROR(walker_.RunMicroBatch(it, mb));
      MEMPLAN_RETURN_IF_ERROR(walker_.RunOptimizerPhase(it));
    }
    result_.allocator = std::string(allocator_.name());
    result_.buffer_bytes = walker_.buffer_bytes();
    const WalkPeak& peak = walker_.peak();
    result_.peak_bytes = peak.bytes;
    result_.peak_at = peak.at;
    result_.peak_step_name = peak.step_name;
    result_.peak_breakdown = peak.breakdown;
    result_.peak_allocated_bytes = walker_.model_peak_allocated_bytes();
    result_.peak_reserved_bytes = walker_.model_peak_reserved_bytes();
    result_.out_of_memory = walker_.out_of_memory();
    if (result_.out_of_memory) result_.out_of_memory_at = walker_.out_of_memory_at();
    result_.num_allocations = walker_.num_allocations();
    result_.persistent_bytes = walker_.live_stat().current;
    result_.host_peak_bytes = walker_.host_peak().bytes;
    result_.host_peak_breakdown = walker_.host_peak().breakdown;
    result_.host_persistent_bytes = walker_.host_stat().current;
    result_.fragmentation_bytes = result_.peak_reserved_bytes - result_.peak_bytes;
    result_.trace = walker_.trace();
    return std::move(result_);
  }

  void OnStepBegun(const Step& step, const ExecutionPoint& at) override {
    (void)step;
    if (!options_.record_timeline) return;
    result_.timeline.push_back(
        TimelinePoint{at, walker_.live_stat().current, walker_.live_by_category(),
                      allocator_.allocated_bytes(), allocator_.reserved_bytes()});
  }

  void OnStepEnded(const Step& step, const ExecutionPoint& at) override {
    (void)step;
    if (at.step == saved_sample_step_ && at.micro_batch == 0 &&
        at.iteration == options_.iterations - 1) {
      result_.saved_activation_bytes = HeldForBackwardBytes(MemorySpace::kDevice);
      result_.host_saved_activation_bytes = HeldForBackwardBytes(MemorySpace::kHost);
    }
  }

 private:
  int64_t HeldForBackwardBytes(MemorySpace space) const {
    int64_t total = 0;
    for (const Buffer& b : program_.buffers)
      if (b.held_for_backward && b.space == space && walker_.live(b.id))
        total += walker_.bytes(b.id);
    return total;
  }

  // Where one micro-batch's forward ends: the loss step, or the copies to the host that follow
  // it (--offload activations packs what the loss saved right after it; until then those
  // tensors are still on the GPU, after it only on the host).
  static LogicalTime SavedSampleStep(const TrainingProgram& program) {
    LogicalTime t = program.loss_step;
    while (t + 1 < program.micro_batch.end && program.step(t + 1).kind == StepKind::kTransfer &&
           program.step(t + 1).transfer.direction == TransferDirection::kToHost)
      ++t;
    return t;
  }

  const TrainingProgram& program_;
  const LogicalTime saved_sample_step_ = SavedSampleStep(program_);
  AllocatorModel& allocator_;
  const SimulationOptions& options_;
  ProgramWalker walker_;
  SimulationResult result_;
};

}  // namespace

Expected<SimulationResult> Simulate(const TrainingProgram& program, const Bindings& bindings,
                                    AllocatorModel& allocator, const SimulationOptions& options) {
  MEMPLAN_TRY(std::vector<int64_t> sizes, EvaluateBufferSizes(program, bindings));
  return SimulateSized(program, std::move(sizes), allocator, options);
}

Expected<SimulationResult> SimulateSized(const TrainingProgram& program,
                                         std::vector<int64_t> buffer_bytes,
                                         AllocatorModel& allocator,
                                         const SimulationOptions& options) {
  Replay replay(program, allocator, options, std::move(buffer_bytes));
  return replay.Run();
}

}  // namespace memplan
