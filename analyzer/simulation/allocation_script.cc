#include "analyzer/simulation/allocation_script.h"

#include <algorithm>
#include <limits>
#include <string>

#include "analyzer/simulation/caching_allocator.h"

namespace memplan {
namespace {

// The walk's listener: notes what the walker hands the allocator model (device buffers only;
// pinned host memory never reaches it) and where it samples the peaks (OnStepBegun follows the
// walker's SamplePeak).
class Recorder final : public WalkListener {
 public:
  Recorder(const TrainingProgram& program, std::vector<int64_t>& ops)
      : program_(program), ops_(ops) {}

  Status OnAlloc(BufferId buffer, BufferId storage_of) override {
    (void)storage_of;  // a hand-over still allocates from the model (ProgramWalker::Apply)
    if (!program_.buffer(buffer).on_host())
      ops_.push_back(2 * static_cast<int64_t>(buffer.index()));
    return OkStatus();
  }
  void OnFree(BufferId buffer, bool handed_over) override {
    (void)handed_over;
    if (!program_.buffer(buffer).on_host())
      ops_.push_back(2 * static_cast<int64_t>(buffer.index()) + 1);
  }
  void OnStepBegun(const Step& step, const ExecutionPoint& at) override {
    (void)step;
    (void)at;
    ops_.push_back(-1);
  }

 private:
  const TrainingProgram& program_;
  std::vector<int64_t>& ops_;
};

}  // namespace

Expected<AllocationScript> AllocationScript::Record(const TrainingProgram& program,
                                                    int64_t accumulation_steps, int iterations,
                                                    const ProgramTape* tape) {
  // Simulate's checks and messages, in its order (analyzer/simulation/simulator.cc, Replay::Run).
  if (accumulation_steps < 1)
    return MakeError("accumulation steps must be >= 1, got " + std::to_string(accumulation_steps));
  if (iterations < 1) return MakeError("simulation needs at least one iteration");
  AllocationScript script;
  script.num_buffers_ = program.buffers.size();
  Recorder recorder(program, script.ops_);
  // Sizes do not change which events run: the walk is sized at zero bytes.
  ProgramWalker walker(program, std::vector<int64_t>(program.buffers.size(), 0),
                       /*model=*/nullptr, &recorder,
                       WalkOptions{/*record_trace=*/false, /*check_operands=*/false, tape});
  MEMPLAN_RETURN_IF_ERROR(walker.RunSetup());
  const int64_t replayed = std::min<int64_t>(accumulation_steps, 2);
  for (int it = 0; it < iterations; ++it) {
    for (int64_t mb = 0; mb < replayed; ++mb) MEMPLAN_RETURN_IF_ERROR(walker.RunMicroBatch(it, mb));
    MEMPLAN_RETURN_IF_ERROR(walker.RunOptimizerPhase(it));
  }
  script.ops_.shrink_to_fit();
  return script;
}

namespace {

// The replay loop, for one model type: with the concrete (final) class its Allocate and Free
// calls are direct and inlined, which matters at tens of millions of requests per plan. Returns
// false, with the peaks so far, at the first sample past a limit.
template <class Model>
bool ReplayOps(const std::vector<int64_t>& ops, const std::vector<int64_t>& buffer_bytes,
               Model& model, int64_t sample, int64_t reserved_limit, int64_t live_limit,
               ScriptPeaks& peaks) {
  model.Reset();
  peaks = ScriptPeaks{};
  int64_t live = 0;
  for (const int64_t op : ops) {
    if (op == sample) {
      // The walker's rule: the highest sample (live bytes are never negative, so the first
      // sample is at least the initial 0).
      peaks.live_bytes = std::max(peaks.live_bytes, live);
      peaks.allocated_bytes = std::max(peaks.allocated_bytes, model.allocated_bytes());
      peaks.reserved_bytes = std::max(peaks.reserved_bytes, model.reserved_bytes());
      if (peaks.reserved_bytes > reserved_limit || peaks.live_bytes > live_limit) return false;
      continue;
    }
    const int64_t handle = op >> 1;
    const int64_t bytes = buffer_bytes[static_cast<size_t>(handle)];
    if ((op & 1) == 0) {
      live += bytes;
      // A refusal (only a model with a capacity refuses: PyTorch's out-of-memory error) ends
      // the step, so it ends the replay, with the peaks so far.
      if (!model.Allocate(handle, bytes)) {
        peaks.refused = true;
        return true;
      }
    } else {
      live -= bytes;
      model.Free(handle);
    }
  }
  return true;
}

bool ReplayOnModel(const std::vector<int64_t>& ops, const std::vector<int64_t>& buffer_bytes,
                   AllocatorModel& model, int64_t sample, int64_t reserved_limit,
                   int64_t live_limit, ScriptPeaks& peaks) {
  if (auto* caching = dynamic_cast<CachingAllocator*>(&model))
    return ReplayOps(ops, buffer_bytes, *caching, sample, reserved_limit, live_limit, peaks);
  return ReplayOps(ops, buffer_bytes, model, sample, reserved_limit, live_limit, peaks);
}

constexpr int64_t kNoLimit = std::numeric_limits<int64_t>::max();

}  // namespace

ScriptPeaks AllocationScript::Replay(const std::vector<int64_t>& buffer_bytes,
                                     AllocatorModel& model) const {
  MEMPLAN_CHECK(buffer_bytes.size() == num_buffers_);
  ScriptPeaks peaks;
  (void)ReplayOnModel(ops_, buffer_bytes, model, kSample, kNoLimit, kNoLimit, peaks);
  return peaks;
}

std::optional<ScriptPeaks> AllocationScript::ReplayWithin(const std::vector<int64_t>& buffer_bytes,
                                                          AllocatorModel& model,
                                                          int64_t reserved_limit,
                                                          int64_t live_limit) const {
  MEMPLAN_CHECK(buffer_bytes.size() == num_buffers_);
  ScriptPeaks peaks;
  if (!ReplayOnModel(ops_, buffer_bytes, model, kSample, reserved_limit, live_limit, peaks))
    return std::nullopt;
  return peaks;
}

int64_t AllocationScript::LivePeak(const std::vector<int64_t>& buffer_bytes) const {
  MEMPLAN_CHECK(buffer_bytes.size() == num_buffers_);
  int64_t peak = 0;
  int64_t live = 0;
  for (const int64_t op : ops_) {
    if (op == kSample) {
      peak = std::max(peak, live);
    } else if ((op & 1) == 0) {
      live += buffer_bytes[static_cast<size_t>(op >> 1)];
    } else {
      live -= buffer_bytes[static_cast<size_t>(op >> 1)];
    }
  }
  return peak;
}

}  // namespace memplan
