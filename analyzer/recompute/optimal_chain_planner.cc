#include "analyzer/recompute/optimal_chain_planner.h"

#include <algorithm>
#include <limits>
#include <optional>
#include <vector>

#include "analyzer/recompute/baseline_planners.h"
#include "analyzer/recompute/chain_coarsening.h"

namespace memplan {
namespace {

constexpr double kUnreachable = std::numeric_limits<double>::infinity();

int64_t CeilDiv(int64_t a, int64_t b) { return a / b + (a % b != 0 ? 1 : 0); }

// The DP over a chain already rounded to slots (docs/recompute.md, "The recurrence").
//
// State (b, m): the first b stages (1-based stages 1..b) are scheduled, and the bytes they keep
// for backward — the "prefix" — are exactly m slots. cost(b, m) is the least forward+recompute
// time to get there. A transition appends one segment [a+1, b] starting from (a, m); it is allowed
// when m + local(a, b) <= M, where local is the segment's own peak above the prefix, taken over
// its forward, its recompute and its backward (the later segments are freed by the time this
// segment's backward runs, so the prefix is all that is held beside it). The segment then adds
// kept(a, b) to the prefix: abar for a stored stage, a_b for a recomputed segment.
class SegmentDp {
 public:
  SegmentDp(const Chain& chain_in_slots, int64_t budget_slots)
      : n_(chain_in_slots.num_stages()), budget_(budget_slots) {
    const size_t size = static_cast<size_t>(n_) + 1;
    x_.assign(size, 0);
    stored_.assign(size, 0);
    fwd_tmp_.assign(size, 0);
    bwd_tmp_.assign(size, 0);
    fwd_time_.assign(size, 0);
    x_[0] = chain_in_slots.input_bytes;
    for (int k = 1; k <= n_; ++k) {
      const ChainStage& s = chain_in_slots.stages[static_cast<size_t>(k - 1)];
      x_[Index(k)] = s.output_bytes;
      stored_[Index(k)] = s.output_bytes + s.saved_bytes;
      fwd_tmp_[Index(k)] = s.forward_overhead_bytes;
      bwd_tmp_[Index(k)] = s.backward_overhead_bytes;
      fwd_time_[Index(k)] = s.forward_time;
    }
    const size_t cells = size * static_cast<size_t>(budget_ + 1);
    cost_.assign(cells, kUnreachable);
    choice_.assign(cells, -1);
    row_lo_.assign(size, budget_ + 1);
    row_hi_.assign(size, -1);
  }

  // The best schedule's segments (0-based stages), or nothing when no schedule fits.
  std::optional<std::vector<ChainSegment>> Solve() {
    if (x_[0] > budget_) return std::nullopt;
    Set(0, x_[0], 0.0, -1);
    for (int a = 0; a < n_; ++a) {
      if (row_lo_[Index(a)] > row_hi_[Index(a)]) continue;  // no way to reach boundary a
      RelaxStored(a);
      RelaxRecomputed(a);
    }
    const int64_t best_m = BestFinalPrefix();
    if (best_m < 0) return std::nullopt;
    return Reconstruct(best_m);
  }

 private:
  static size_t Index(int k) { return static_cast<size_t>(k); }
  // The gradient d_k: none for the chain input.
  int64_t Grad(int k) const { return k == 0 ? 0 : x_[Index(k)]; }
  size_t Cell(int b, int64_t m) const {
    return Index(b) * static_cast<size_t>(budget_ + 1) + static_cast<size_t>(m);
  }
  void Set(int b, int64_t m, double cost, int32_t choice) {
    cost_[Cell(b, m)] = cost;
    choice_[Cell(b, m)] = choice;
    row_lo_[Index(b)] = std::min(row_lo_[Index(b)], m);
    row_hi_[Index(b)] = std::max(row_hi_[Index(b)], m);
  }

  // Segment [a+1, b] in `mode`: every reachable prefix m with m + local <= budget moves to
  // (b, m + kept) at `added` more time.
  void Relax(int a, int b, int64_t local, int64_t kept, double added, SegmentMode mode) {
    const int64_t lo = row_lo_[Index(a)];
    const int64_t hi = std::min(row_hi_[Index(a)], budget_ - local);
    if (hi < lo) return;
    MEMPLAN_CHECK(kept <= local);  // so m + kept stays inside the table
    const int32_t choice = a * 2 + (mode == SegmentMode::kRecomputed ? 1 : 0);
    for (int64_t m = lo; m <= hi; ++m) {
      const double from = cost_[Cell(a, m)];
      if (from == kUnreachable) continue;
      const double to = from + added;
      if (to < cost_[Cell(b, m + kept)]) Set(b, m + kept, to, choice);
    }
  }

  // Stage a+1 stored: F^all peaks at abar + fwd_tmp; B at abar + d_{a+1} + d_a + bwd_tmp.
  void RelaxStored(int a) {
    const int k = a + 1;
    const int64_t forward_peak = stored_[Index(k)] + fwd_tmp_[Index(k)];
    const int64_t backward_peak = stored_[Index(k)] + Grad(k) + Grad(k - 1) + bwd_tmp_[Index(k)];
    Relax(a, k, std::max(forward_peak, backward_peak), stored_[Index(k)], 0.0,
          SegmentMode::kStored);
  }

  // Segments [a+1, b] recomputed, for every b, with the segment's local peaks kept as running
  // maxima while b grows:
  //   recompute F^all_j:       d_b + stored(a+1..j) + fwd_tmp_j
  //   backward B_j:            stored(a+1..j) + d_j + d_{j-1} + bwd_tmp_j
  // Two more moments need no term of their own, being dominated by the recompute of the same
  // segment (same prefix, and stored_j >= a_j, d_b = a_b):
  //   forward F^none_j:        a_{j-1} + a_j + fwd_tmp_j  <=  d_b + stored(a+1..j) + fwd_tmp_j
  //   loss, when b = n:        a_n + d_n                  <=  d_n + stored(a+1..n) + fwd_tmp_n
  // (the brute-force test, which simulates every moment, checks this.)
  void RelaxRecomputed(int a) {
    int64_t recompute_max = 0;  // without the d_b term, which depends on b
    int64_t backward_max = 0;
    int64_t stored_sum = 0;
    double added = 0;
    for (int b = a + 1; b <= n_; ++b) {
      stored_sum += stored_[Index(b)];
      recompute_max = std::max(recompute_max, stored_sum + fwd_tmp_[Index(b)]);
      backward_max =
          std::max(backward_max, stored_sum + Grad(b) + Grad(b - 1) + bwd_tmp_[Index(b)]);
      added += fwd_time_[Index(b)];
      // Every longer segment holds at least stored_sum during its backward: stop when even the
      // smallest reachable prefix cannot afford it.
      if (row_lo_[Index(a)] + stored_sum > budget_) break;
      const int64_t local = std::max(Grad(b) + recompute_max, backward_max);
      Relax(a, b, local, x_[Index(b)], added, SegmentMode::kRecomputed);
    }
  }

  int64_t BestFinalPrefix() const {
    int64_t best = -1;
    for (int64_t m = 0; m <= budget_; ++m) {
      if (cost_[Cell(n_, m)] == kUnreachable) continue;
      if (best < 0 || cost_[Cell(n_, m)] < cost_[Cell(n_, best)]) best = m;
    }
    return best;
  }

  std::vector<ChainSegment> Reconstruct(int64_t m) const {
    std::vector<ChainSegment> segments;
    int b = n_;
    while (b > 0) {
      const int32_t choice = choice_[Cell(b, m)];
      MEMPLAN_CHECK(choice >= 0);
      const int a = choice / 2;
      const bool recomputed = choice % 2 == 1;
      // 1-based stages a+1..b are 0-based stages a..b-1.
      segments.push_back({a, b - 1, recomputed ? SegmentMode::kRecomputed : SegmentMode::kStored});
      m -= recomputed ? x_[Index(b)] : stored_[Index(b)];
      b = a;
    }
    MEMPLAN_CHECK(m == x_[0]);
    std::reverse(segments.begin(), segments.end());
    return segments;
  }

  int n_;
  int64_t budget_;
  // 1-based per stage (index 0: the chain input), in slots.
  std::vector<int64_t> x_, stored_, fwd_tmp_, bwd_tmp_;
  std::vector<double> fwd_time_;
  // (n+1) x (budget+1), row-major by boundary.
  std::vector<double> cost_;
  std::vector<int32_t> choice_;  // a*2 + (recomputed ? 1 : 0) of the last segment; -1 for none
  std::vector<int64_t> row_lo_, row_hi_;  // reachable prefix range per boundary
};

// The cheapest simple schedule whose exact peak fits. Rounding can make the DP miss a schedule
// that fits (no recompute at a budget equal to its peak, typically); the simple schedules belong
// to the same family, so whichever is cheaper is returned.
std::optional<RecomputeSchedule> CheapestFittingSimpleSchedule(const Chain& chain, int64_t budget) {
  std::vector<Expected<RecomputeSchedule>> candidates;
  candidates.push_back(PlanNoRecompute(chain));
  candidates.push_back(PlanSqrtCheckpoints(chain, {SqrtSpacing::kByStageCount}));
  candidates.push_back(PlanSqrtCheckpoints(chain, {SqrtSpacing::kByMemory}));
  candidates.push_back(PlanRecomputeAll(chain));
  std::optional<RecomputeSchedule> best;
  for (auto& candidate : candidates) {
    if (!candidate.ok() || candidate->predicted_peak_bytes > budget) continue;
    if (!best || candidate->total_time < best->total_time) best = std::move(*candidate);
  }
  if (best) best->planner = "optimal(" + best->planner + ")";
  return best;
}

}  // namespace

int64_t SlotBytesFor(int64_t memory_budget, int memory_slots) {
  MEMPLAN_CHECK(memory_slots >= 1);
  return std::max<int64_t>(1, CeilDiv(std::max<int64_t>(memory_budget, 0), memory_slots));
}

Chain RoundChainUpToSlots(const Chain& chain, int64_t slot_bytes) {
  MEMPLAN_CHECK(slot_bytes >= 1);
  auto up = [&](int64_t bytes) { return CeilDiv(bytes, slot_bytes); };
  Chain rounded = chain;
  rounded.input_bytes = up(chain.input_bytes);
  for (ChainStage& s : rounded.stages) {
    s.output_bytes = up(s.output_bytes);
    s.saved_bytes = up(s.saved_bytes);
    s.forward_overhead_bytes = up(s.forward_overhead_bytes);
    s.backward_overhead_bytes = up(s.backward_overhead_bytes);
  }
  return rounded;
}

Expected<RecomputeSchedule> PlanOptimalChain(const Chain& chain, int64_t memory_budget,
                                             const ChainPlannerOptions& options) {
  MEMPLAN_RETURN_IF_ERROR(ValidateChain(chain));
  if (memory_budget < 0) return MakeError("the activation memory budget is negative");
  if (options.memory_slots < 1 || options.max_stages < 0) {
    return MakeError("recompute planner options need memory_slots >= 1 and max_stages >= 0");
  }

  const bool coarsen = options.max_stages > 0 && chain.num_stages() > options.max_stages;
  std::optional<CoarseChain> coarse;
  if (coarsen) coarse = CoarsenChain(chain, options.max_stages);
  const Chain& planned = coarse ? coarse->chain : chain;

  const int64_t slot_bytes = SlotBytesFor(memory_budget, options.memory_slots);
  SegmentDp dp(RoundChainUpToSlots(planned, slot_bytes), memory_budget / slot_bytes);
  std::optional<RecomputeSchedule> simple = CheapestFittingSimpleSchedule(chain, memory_budget);
  if (std::optional<std::vector<ChainSegment>> segments = dp.Solve()) {
    std::vector<ChainSegment> fine = coarse ? ExpandSegments(*coarse, *segments) : *segments;
    MEMPLAN_TRY(RecomputeSchedule schedule,
                MakeRecomputeSchedule(chain, std::move(fine), "optimal"));
    // Rounding (and coarsening) only ever over-estimate: a plan over budget is a bug.
    MEMPLAN_CHECK(schedule.predicted_peak_bytes <= memory_budget);
    if (simple && simple->total_time < schedule.total_time) return *std::move(simple);
    return schedule;
  }
  if (simple) return *std::move(simple);
  MEMPLAN_TRY(RecomputeSchedule all, PlanRecomputeAll(chain));
  return MakeError("no recompute schedule fits an activation budget of " +
                   std::to_string(memory_budget) + " bytes for this " +
                   std::to_string(chain.num_stages()) +
                   "-stage chain; checkpointing every stage needs " +
                   std::to_string(all.predicted_peak_bytes) + " bytes");
}

}  // namespace memplan
