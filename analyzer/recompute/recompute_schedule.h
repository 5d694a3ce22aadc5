#pragma once
// A recompute schedule for a chain (chain.h): the value every chain planner returns.
//
// The schedule family ("single-level, store-all-in-segment"; docs/recompute.md): the stages are
// cut into consecutive segments, and each segment is either
//
//   kStored      forward runs F^all on each stage, keeping abar_k until B_k: no recompute;
//   kRecomputed  forward runs F^none on each stage, keeping only the segment's input (already
//                held: it is the chain input or the previous segment's kept output) and the
//                segment's last output; in backward, when the segment's turn comes, the whole
//                segment is re-run with F^all from its input ("store all in segment"), then
//                B_last … B_first run.
//
//   stages:   0    1    2    3    4    5    6
//   segments: [R        ][S ][S ][R             ]
//   kept through forward: a_in, a_2 (end of the first R segment), abar_3, abar_4, a_6
//
// This is exactly what PyTorch's torch.utils.checkpoint does per checkpointed block and what the
// program derivation can express with a set of recomputed nodes: no nested (multi-level)
// recomputation as in Rotor's full schedule family.

#include <cstdint>
#include <string>
#include <vector>

#include "analyzer/recompute/chain.h"
#include "graph/expected.h"

namespace memplan {

enum class SegmentMode : uint8_t { kStored, kRecomputed };

struct ChainSegment {
  int first_stage = 0;  // inclusive
  int last_stage = 0;   // inclusive
  SegmentMode mode = SegmentMode::kStored;
  friend bool operator==(const ChainSegment&, const ChainSegment&) = default;
};

struct RecomputeSchedule {
  std::string planner;                 // which planner made it ("optimal", "sqrt", ...)
  std::vector<ChainSegment> segments;  // in order, covering every stage once
  double added_time = 0;               // sum of forward_time over recomputed stages
  double total_time = 0;               // forward + backward + added_time
  int64_t predicted_peak_bytes = 0;    // exact peak of the chain under this schedule

  int num_stages() const { return segments.empty() ? 0 : segments.back().last_stage + 1; }
  // Whether stage k's forward runs twice (F^none in forward, F^all in backward).
  bool IsRecomputed(int k) const;
  // Whether a_k stays in memory from its forward until backward needs it: true for stored stages
  // and for the last stage of each recomputed segment (the next segment restarts from it).
  bool IsOutputKept(int k) const;
  // The stages whose kept output borders a recomputed segment: the checkpoints a report shows.
  std::vector<int> CheckpointStages() const;
  int NumRecomputedStages() const;
};

// Builds a schedule from segments and fills added_time, total_time and predicted_peak_bytes by
// simulating it (chain_schedule_simulator.h). Error when the segments do not cover the chain's
// stages in order.
Expected<RecomputeSchedule> MakeRecomputeSchedule(const Chain& chain,
                                                  std::vector<ChainSegment> segments,
                                                  std::string planner);

// Same, from one mode per stage: consecutive recomputed stages form ONE segment. Stored stages are
// one segment each.
Expected<RecomputeSchedule> MakeRecomputeScheduleFromModes(const Chain& chain,
                                                           const std::vector<SegmentMode>& modes,
                                                           std::string planner);

// "stages 0-2 R, 3 S, ..." for logs and test failure messages.
std::string DescribeSchedule(const RecomputeSchedule& schedule);

}  // namespace memplan
