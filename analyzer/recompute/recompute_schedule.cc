#include "analyzer/recompute/recompute_schedule.h"

#include <algorithm>

#include "analyzer/recompute/chain_schedule_simulator.h"

namespace memplan {
namespace {

// Segments are sorted and contiguous, so the one holding stage k is the first ending at or after k.
const ChainSegment& SegmentOf(const RecomputeSchedule& schedule, int k) {
  auto it =
      std::lower_bound(schedule.segments.begin(), schedule.segments.end(), k,
                       [](const ChainSegment& seg, int stage) { return seg.last_stage < stage; });
  MEMPLAN_CHECK(it != schedule.segments.end() && it->first_stage <= k);
  return *it;
}

}  // namespace

bool RecomputeSchedule::IsRecomputed(int k) const {
  return SegmentOf(*this, k).mode == SegmentMode::kRecomputed;
}

bool RecomputeSchedule::IsOutputKept(int k) const {
  const ChainSegment& seg = SegmentOf(*this, k);
  return seg.mode == SegmentMode::kStored || k == seg.last_stage;
}

std::vector<int> RecomputeSchedule::CheckpointStages() const {
  std::vector<int> stages;
  const int n = num_stages();
  for (int k = 0; k + 1 < n; ++k) {
    // a_k is a checkpoint when some recomputed segment starts from it or ends with it.
    if (IsOutputKept(k) && (IsRecomputed(k) || IsRecomputed(k + 1))) stages.push_back(k);
  }
  return stages;
}

int RecomputeSchedule::NumRecomputedStages() const {
  int count = 0;
  for (const ChainSegment& seg : segments) {
    if (seg.mode == SegmentMode::kRecomputed) count += seg.last_stage - seg.first_stage + 1;
  }
  return count;
}

Expected<RecomputeSchedule> MakeRecomputeSchedule(const Chain& chain,
                                                  std::vector<ChainSegment> segments,
                                                  std::string planner) {
  int expected_first = 0;
  for (const ChainSegment& seg : segments) {
    if (seg.first_stage != expected_first || seg.last_stage < seg.first_stage) {
      return MakeError("recompute schedule segments must cover the chain's stages in order; got [" +
                       std::to_string(seg.first_stage) + ", " + std::to_string(seg.last_stage) +
                       "] where stage " + std::to_string(expected_first) + " was next");
    }
    expected_first = seg.last_stage + 1;
  }
  if (expected_first != chain.num_stages()) {
    return MakeError("recompute schedule covers " + std::to_string(expected_first) +
                     " stages but the chain has " + std::to_string(chain.num_stages()));
  }
  RecomputeSchedule schedule;
  schedule.planner = std::move(planner);
  schedule.segments = std::move(segments);
  const ChainSimulation sim = SimulateChainSchedule(chain, schedule.segments);
  schedule.added_time = sim.added_time;
  schedule.total_time = sim.total_time;
  schedule.predicted_peak_bytes = sim.peak_bytes;
  return schedule;
}

Expected<RecomputeSchedule> MakeRecomputeScheduleFromModes(const Chain& chain,
                                                           const std::vector<SegmentMode>& modes,
                                                           std::string planner) {
  if (static_cast<int>(modes.size()) != chain.num_stages()) {
    return MakeError("recompute schedule has " + std::to_string(modes.size()) +
                     " stage modes but the chain has " + std::to_string(chain.num_stages()));
  }
  std::vector<ChainSegment> segments;
  for (int k = 0; k < chain.num_stages(); ++k) {
    const SegmentMode mode = modes[static_cast<size_t>(k)];
    const bool extends = mode == SegmentMode::kRecomputed && !segments.empty() &&
                         segments.back().mode == SegmentMode::kRecomputed;
    if (extends) {
      segments.back().last_stage = k;
    } else {
      segments.push_back({k, k, mode});
    }
  }
  return MakeRecomputeSchedule(chain, std::move(segments), std::move(planner));
}

std::string DescribeSchedule(const RecomputeSchedule& schedule) {
  std::string text;
  for (const ChainSegment& seg : schedule.segments) {
    if (!text.empty()) text += ", ";
    text += std::to_string(seg.first_stage);
    if (seg.last_stage != seg.first_stage) text += "-" + std::to_string(seg.last_stage);
    text += seg.mode == SegmentMode::kRecomputed ? " R" : " S";
  }
  return text;
}

}  // namespace memplan
