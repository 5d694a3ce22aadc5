#pragma once
// Test-only reference for the optimal chain planner: enumerates EVERY schedule of the family the
// DP optimises over (recompute_schedule.h: consecutive segments, each stored or recomputed) and
// evaluates each with the operation-by-operation simulator, not with the DP's closed-form
// segment peaks. Exponential (about 2.6^L schedules): only for chains of up to ~14 stages.

#include <functional>
#include <limits>
#include <optional>
#include <vector>

#include "analyzer/recompute/chain.h"
#include "analyzer/recompute/chain_schedule_simulator.h"
#include "analyzer/recompute/recompute_schedule.h"

namespace memplan::testing {

struct EvaluatedSchedule {
  std::vector<ChainSegment> segments;
  int64_t peak_bytes = 0;
  double added_time = 0;
};

// Every schedule of the family. A stored segment of several stages behaves exactly like that many
// one-stage stored segments, so stored segments are enumerated with one stage each.
inline std::vector<EvaluatedSchedule> EnumerateSchedules(const Chain& chain) {
  std::vector<EvaluatedSchedule> all;
  std::vector<ChainSegment> current;
  const int n = chain.num_stages();
  std::function<void(int)> extend = [&](int first) {
    if (first == n) {
      const ChainSimulation sim = SimulateChainSchedule(chain, current);
      all.push_back({current, sim.peak_bytes, sim.added_time});
      return;
    }
    current.push_back({first, first, SegmentMode::kStored});
    extend(first + 1);
    current.pop_back();
    for (int last = first; last < n; ++last) {
      current.push_back({first, last, SegmentMode::kRecomputed});
      extend(last + 1);
      current.pop_back();
    }
  };
  extend(0);
  return all;
}

// The least added time over schedules whose peak fits the budget; nothing when none fits.
inline std::optional<double> BestAddedTime(const std::vector<EvaluatedSchedule>& all,
                                           int64_t budget) {
  std::optional<double> best;
  for (const EvaluatedSchedule& s : all) {
    if (s.peak_bytes <= budget && (!best || s.added_time < *best)) best = s.added_time;
  }
  return best;
}

inline int64_t MinPeak(const std::vector<EvaluatedSchedule>& all) {
  int64_t best = std::numeric_limits<int64_t>::max();
  for (const EvaluatedSchedule& s : all) best = std::min(best, s.peak_bytes);
  return best;
}

}  // namespace memplan::testing
