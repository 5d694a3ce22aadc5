#include "analyzer/recompute/chain_schedule_simulator.h"

#include <algorithm>
#include <vector>

namespace memplan {
namespace {

enum class TensorKind : uint8_t { kActivation, kSaved, kGradient };
constexpr int kNumTensorKinds = 3;
struct TensorKey {
  TensorKind kind;
  int stage;  // -1 is the chain input
};

// Live tensors and the running peak. Every alloc/free is checked, so a schedule that would use a
// tensor twice or free one that is not live is caught as a bug here, not as a wrong peak.
class LiveMemory {
 public:
  explicit LiveMemory(int num_stages)
      : bytes_(static_cast<size_t>(kNumTensorKinds) * static_cast<size_t>(num_stages + 1), -1) {}

  void Alloc(TensorKey key, int64_t bytes) {
    int64_t& slot = Slot(key);
    MEMPLAN_CHECK(slot < 0);
    slot = bytes;
    ++num_live_;
    current_ += bytes;
    peak_ = std::max(peak_, current_);
  }
  void Free(TensorKey key) {
    int64_t& slot = Slot(key);
    MEMPLAN_CHECK(slot >= 0);
    current_ -= slot;
    slot = -1;
    --num_live_;
  }
  // A transient buffer that lives only while one operation runs.
  void Transient(int64_t bytes) { peak_ = std::max(peak_, current_ + bytes); }
  int64_t peak() const { return peak_; }
  int num_live() const { return num_live_; }

 private:
  int64_t& Slot(TensorKey key) {
    const size_t index = static_cast<size_t>(key.kind) * (bytes_.size() / kNumTensorKinds) +
                         static_cast<size_t>(key.stage + 1);
    MEMPLAN_CHECK(index < bytes_.size());
    return bytes_[index];
  }

  std::vector<int64_t> bytes_;  // per (kind, stage + 1): live size, or -1 when not live
  int num_live_ = 0;
  int64_t current_ = 0;
  int64_t peak_ = 0;
};

}  // namespace

ChainSimulation SimulateChainSchedule(const Chain& chain,
                                      const std::vector<ChainSegment>& segments) {
  const int num_stages = chain.num_stages();
  MEMPLAN_CHECK(num_stages > 0 && !segments.empty());
  std::vector<bool> recomputed(static_cast<size_t>(num_stages), false);
  int expected_first = 0;
  for (const ChainSegment& seg : segments) {
    MEMPLAN_CHECK(seg.first_stage == expected_first && seg.last_stage >= seg.first_stage);
    for (int k = seg.first_stage; k <= seg.last_stage; ++k) {
      recomputed[static_cast<size_t>(k)] = seg.mode == SegmentMode::kRecomputed;
    }
    expected_first = seg.last_stage + 1;
  }
  MEMPLAN_CHECK(expected_first == num_stages);

  auto stage = [&](int k) -> const ChainStage& { return chain.stages[static_cast<size_t>(k)]; };
  auto act = [](int k) { return TensorKey{TensorKind::kActivation, k}; };
  auto saved = [](int k) { return TensorKey{TensorKind::kSaved, k}; };
  auto grad = [](int k) { return TensorKey{TensorKind::kGradient, k}; };

  ChainSimulation result;
  LiveMemory memory(num_stages);
  memory.Alloc(act(-1), chain.input_bytes);

  auto forward_storing = [&](int k) {
    memory.Alloc(act(k), stage(k).output_bytes);
    memory.Alloc(saved(k), stage(k).saved_bytes);
    memory.Transient(stage(k).forward_overhead_bytes);
    result.total_time += stage(k).forward_time;
  };

  // Forward pass.
  for (const ChainSegment& seg : segments) {
    for (int k = seg.first_stage; k <= seg.last_stage; ++k) {
      if (seg.mode == SegmentMode::kStored) {
        forward_storing(k);
        continue;
      }
      memory.Alloc(act(k), stage(k).output_bytes);
      memory.Transient(stage(k).forward_overhead_bytes);
      result.total_time += stage(k).forward_time;
      if (k > seg.first_stage) memory.Free(act(k - 1));
    }
  }

  // The loss turns a_{L-1} into d_{L-1}; a recomputed last stage re-creates a_{L-1} later.
  memory.Alloc(grad(num_stages - 1), stage(num_stages - 1).output_bytes);
  if (recomputed.back()) memory.Free(act(num_stages - 1));

  // Backward pass.
  for (auto seg = segments.rbegin(); seg != segments.rend(); ++seg) {
    if (seg->mode == SegmentMode::kRecomputed) {
      for (int k = seg->first_stage; k <= seg->last_stage; ++k) {
        forward_storing(k);
        result.added_time += stage(k).forward_time;
      }
    }
    for (int k = seg->last_stage; k >= seg->first_stage; --k) {
      if (k > 0) memory.Alloc(grad(k - 1), stage(k - 1).output_bytes);
      memory.Transient(stage(k).backward_overhead_bytes);
      result.total_time += stage(k).backward_time;
      memory.Free(grad(k));
      memory.Free(act(k));
      memory.Free(saved(k));
      // The previous recomputed segment's kept output has served its last use here; that segment
      // re-creates it when it re-runs.
      const bool input_is_recomputed_segment_end =
          k == seg->first_stage && k > 0 && recomputed[static_cast<size_t>(k - 1)];
      if (input_is_recomputed_segment_end) memory.Free(act(k - 1));
    }
  }
  MEMPLAN_CHECK(memory.num_live() == 1);  // only the chain input is left
  result.peak_bytes = memory.peak();
  return result;
}

}  // namespace memplan
