#include "analyzer/planning/micro_batch_search.h"

namespace memplan::planning {
namespace {

// The largest m in [1, cap] whose peak (peak_of(m, limit), an Expected<int64_t>: the peak on a
// device of `limit` bytes, which may release cached segments to stay in it) is at most `limit`,
// assuming memory grows with m; 0 when m = 1 does not fit. fits_at(m, limit) (an Expected<bool>) is
// peak_of(m) <= limit, answered from as little of a simulation as decides it. Every probe is a
// simulation of the whole program, so the search spends as few as it can:
//  * growing: m doubles from 1 while its live peak (live_peak_of(m), a lower bound of the peak
//    that needs no allocator replay) is within the limit, so the first power of two past it is
//    known not to fit without a simulation; the powers below it are then simulated downward
//    until one fits (usually the first: a 50,000-node chain simulated 15 powers of two before);
//  * closing: the peak is nearly affine in m (every activation scales with the batch), so the probe
//    is where the line through the bracket's ends crosses the limit, followed by its neighbour
//    across the crossing, which closes the bracket when the line was right (two probes instead
//    of bisection's log2 of the bracket);
//  * where a secant step does not halve the bracket, the line is bent (the allocator's rounding,
//    or a caching model's segments that make the peak a staircase: a 50,000-node chain's
//    reserved bytes jump from 17.6 to 26.3 GB between two neighbouring m, and a line through
//    such steps lands on the same side again and again), so the search bisects to the end with
//    fit tests: a probe past the limit stops where its replay crosses it.
// Where memory does grow with m, every such search finds the same m: the one crossing.
template <class PeakOf, class LivePeakOf, class FitsAt>
Expected<int64_t> LargestFitting(int64_t cap, int64_t limit, PeakOf peak_of,
                                 LivePeakOf live_peak_of, FitsAt fits_at) {
  MEMPLAN_TRY(int64_t peak_one, peak_of(1, limit));
  if (peak_one > limit) return int64_t{0};
  int64_t lo = 1;  // fits
  int64_t hi = 0;  // first known not to fit (0 = none yet)
  int64_t lo_peak = peak_one;
  int64_t hi_peak = 0;
  auto probe = [&](int64_t m) -> Status {
    MEMPLAN_TRY(int64_t peak, peak_of(m, limit));
    if (peak <= limit) {
      lo = m;
      lo_peak = peak;
    } else {
      hi = m;
      hi_peak = peak;
    }
    return OkStatus();
  };
  std::vector<int64_t> within;  // the powers of two (or cap) whose live peak is within the limit
  for (int64_t m = 1; m < cap;) {
    m = std::min(cap, m * 2);
    MEMPLAN_TRY(const int64_t live, live_peak_of(m));
    if (live > limit) {
      hi = m;
      break;
    }
    within.push_back(m);
  }
  // Downward: the first that fits is lo; each that does not is the new hi.
  for (auto it = within.rbegin(); it != within.rend() && lo == 1; ++it)
    MEMPLAN_RETURN_IF_ERROR(probe(*it));
  if (hi == 0) return lo;
  // The secant below needs hi's exact peak where only its live bound is known.
  if (hi_peak == 0) {
    MEMPLAN_TRY(hi_peak, peak_of(hi, limit));
  }
  bool bisect = false;
  while (hi - lo > 1) {
    const int64_t width = hi - lo;
    if (bisect) {
      const int64_t middle = lo + width / 2;
      MEMPLAN_TRY(const bool fits, fits_at(middle, limit));
      (fits ? lo : hi) = middle;
      continue;
    }
    // lo_peak <= limit < hi_peak, so the crossing lies in [lo, hi).
    const double fraction =
        static_cast<double>(limit - lo_peak) / static_cast<double>(hi_peak - lo_peak);
    const int64_t guess = std::clamp<int64_t>(
        lo + static_cast<int64_t>(fraction * static_cast<double>(width)), lo + 1, hi - 1);
    MEMPLAN_RETURN_IF_ERROR(probe(guess));
    if (hi - lo > 1) MEMPLAN_RETURN_IF_ERROR(probe(lo == guess ? guess + 1 : guess - 1));
    bisect = 2 * (hi - lo) > width;
  }
  return lo;
}

int64_t LargestDivisorAtMost(int64_t n, int64_t limit) {
  for (int64_t d = std::min(n, limit); d >= 1; --d)
    if (n % d == 0) return d;
  return 1;
}

InfeasibleReport ExplainInfeasible(const SimulationResult& at_one, int64_t peak,
                                   const PlannerOptions& options) {
  InfeasibleReport r;
  r.required_bytes = peak + options.gpu.context_bytes + options.reserve_bytes;
  int64_t smallest = 0;
  for (const GpuSpec& gpu : KnownGpus()) {
    bool fits = gpu.memory_bytes - gpu.context_bytes - options.reserve_bytes >= peak;
    if (fits && (smallest == 0 || gpu.memory_bytes < smallest)) {
      smallest = gpu.memory_bytes;
      r.smallest_fitting_gpu = gpu.name;
    }
  }
  for (MemoryCategory c : kAllMemoryCategories) {
    if (at_one.peak_breakdown[c] > r.dominant_bytes) {
      r.dominant = c;
      r.dominant_bytes = at_one.peak_breakdown[c];
    }
  }
  return r;
}

// Micro-batch sizes shown in the candidates table: powers of two up to just past the largest
// fitting m (so the table shows where memory runs out), plus the chosen m.
std::vector<int64_t> CandidateMicroBatches(int64_t chosen, int64_t largest, int max_rows) {
  std::vector<int64_t> ms = {chosen};
  if (largest > 0 && largest != chosen) ms.push_back(largest);
  int64_t limit = std::max<int64_t>(largest, chosen) * 2;
  std::vector<int64_t> powers;
  for (int64_t m = 1; m <= limit; m *= 2) powers.push_back(m);
  // Keep the largest powers: the interesting region is near the memory limit.
  for (auto it = powers.rbegin(); it != powers.rend() && static_cast<int>(ms.size()) < max_rows;
       ++it)
    if (std::find(ms.begin(), ms.end(), *it) == ms.end()) ms.push_back(*it);
  std::sort(ms.begin(), ms.end());
  return ms;
}

// PlanTraining's search over one derived program, in named stages: the largest micro-batch that
// fits (and the largest under the headroom), m at the throughput knee, m and k under a global
// batch, the chosen candidate, the candidates table, the chosen plan simulated in full.
class MicroBatchSearch {
 public:
  MicroBatchSearch(const Graph& graph, const PlannerOptions& options, const PlanLimits& limits,
                   CandidateEvaluator& evaluator)
      : options_(options),
        limits_(limits),
        evaluator_(evaluator),
        has_batch_(evaluator.program().batch_symbol.has_value()),
        searched_(!options.micro_batch.has_value()) {
    // Every micro-batch tried is checked against the graph's shapes first (graph/
    // bound_shape_check.h): one at which a Reshape or an Expand no longer holds is bad input
    // naming the node, never a fit, a candidate or the plan. A --tp slice is checked only
    // through the caller's snapshot of the whole model.
    shapes_ = options.micro_batch_shapes;
    if (!shapes_ && has_batch_ && !options.tensor_parallel.enabled())
      shapes_ = std::make_shared<MicroBatchShapeCheck>(graph, options.bindings);
  }

  bool has_batch() const { return has_batch_; }

  // The largest micro-batch that fits the budget and the largest under the headroom (the pinned
  // one when the options pin it); 0 when not even m = 1 fits.
  Status SearchLargest(TrainingPlan& plan, int64_t& largest, int64_t& recommended) {
    const int64_t budget = plan.budget_bytes;
    auto peak_at = [this](int64_t m, int64_t limit) { return PeakAt(m, limit); };
    auto live_peak_at = [this](int64_t m) { return LivePeakAt(m); };
    auto fits_at = [this](int64_t m, int64_t limit) { return FitsAt(m, limit); };
    largest = 1;
    recommended = 1;
    if (options_.micro_batch) {
      largest = *options_.micro_batch;
      recommended = largest;
    } else if (has_batch_) {
      MEMPLAN_TRY(largest,
                  LargestFitting(options_.max_micro_batch, budget, peak_at, live_peak_at, fits_at));
      recommended = largest;
      if (plan.headroom_bytes > 0 && largest > 0) {
        MEMPLAN_TRY(recommended, LargestFitting(largest, budget - plan.headroom_bytes, peak_at,
                                                live_peak_at, fits_at));
        recommended = std::max<int64_t>(recommended, 1);
        // With the k the fit test used (k > 1 under a global batch keeps the gradients live
        // during the next micro-batch), so the share printed beside m is the peak that decided
        // it.
        MEMPLAN_TRY(PlanCandidate at_max,
                    evaluator_.Evaluate(largest, KAt(largest), budget, /*with_time=*/false));
        plan.largest_fitting_peak_bytes = at_max.peak_bytes;
      }
      plan.micro_batch_capped = largest == options_.max_micro_batch;
    }
    plan.largest_fitting_micro_batch = largest;
    plan.largest_within_headroom = largest == 0 ? 0 : recommended;
    return OkStatus();
  }

  // Nothing fits: the plan reports m = 1 and what would be needed.
  Status NothingFits(TrainingPlan& plan) {
    MEMPLAN_TRY(PlanCandidate one, evaluator_.Evaluate(1, 1, plan.budget_bytes));
    SimulationOptions sim;
    MEMPLAN_TRY(SimulationResult at_one, evaluator_.SimulateAt(1, sim, options_.allocator));
    plan.feasible = false;
    plan.chosen = one;
    plan.infeasible = ExplainInfeasible(at_one, one.peak_bytes, options_);
    plan.candidates = {one};
    plan.bindings = evaluator_.BindingsFor(1);
    MEMPLAN_TRY(plan.time, evaluator_.EstimateTime(1, 1, at_one.buffer_bytes));
    plan.simulation = std::move(at_one);
    plan.program = evaluator_.TakeProgram();
    return OkStatus();
  }

  // The throughput knee: the powers of two below `largest` and `largest` itself, each timed at
  // k = 1; the smallest within the tolerance of the best of them.
  Expected<int64_t> KneeMicroBatch(TrainingPlan& plan, int64_t largest) {
    std::vector<int64_t> compared;
    for (int64_t p = 1; p < largest; p *= 2) compared.push_back(p);
    compared.push_back(largest);
    std::vector<double> rates;
    for (int64_t cm : compared) {
      MEMPLAN_RETURN_IF_ERROR(ShapesHold(cm));
      MEMPLAN_TRY(PlanCandidate c, evaluator_.Evaluate(cm, 1, plan.budget_bytes));
      rates.push_back(c.samples_per_second);
    }
    const size_t best =
        static_cast<size_t>(std::max_element(rates.begin(), rates.end()) - rates.begin());
    int64_t m = largest;
    for (size_t i = 0; i < compared.size(); ++i) {
      if (rates[i] >= (1.0 - options_.knee_tolerance) * rates[best]) {
        m = compared[i];
        break;
      }
    }
    if (m < largest) {
      plan.knee = true;
      plan.knee_best_micro_batch = compared[best];
      plan.knee_best_samples_per_second = rates[best];
    }
    return m;
  }

  // Under a requested global batch G (per rank g): m and k with m * k = g where a divisor of g
  // close enough to `largest` allows it, else k = ceil(g / m).
  void SplitGlobalBatch(TrainingPlan& plan, int64_t largest, int64_t& m, int64_t& k) const {
    const int64_t g = *limits_.rank_batch;
    plan.global_batch_requested = true;
    plan.requested_global_batch = g * limits_.ranks;
    if (options_.micro_batch) {
      m = *options_.micro_batch;
      k = CeilDiv(g, m);
    } else if (g <= largest) {
      m = g;
    } else {
      int64_t divisor = LargestDivisorAtMost(g, largest);
      if (static_cast<double>(divisor) >=
          options_.min_divisor_fraction * static_cast<double>(largest)) {
        m = divisor;
        k = g / divisor;
      } else {
        m = largest;
        k = CeilDiv(g, largest);
      }
    }
    plan.global_batch_exact = m * k == g;  // per rank: m * k * N == G exactly
  }

  // The chosen candidate; a pinned m that does not fit is still reported (exit 1 in the CLI)
  // with what would fit.
  Status EvaluateChosen(TrainingPlan& plan, int64_t m, int64_t k) {
    MEMPLAN_RETURN_IF_ERROR(ShapesHold(m, /*exact=*/true));
    MEMPLAN_TRY(plan.chosen, EvaluateKept(plan, m, k));
    plan.feasible = plan.chosen.fits;
    if (!plan.feasible && options_.micro_batch) {
      SimulationOptions sim;
      MEMPLAN_TRY(SimulationResult at_one, evaluator_.SimulateAt(1, sim, options_.allocator));
      int64_t peak_one =
          FitsReservedBytes(options_.allocator) ? at_one.peak_reserved_bytes : at_one.peak_bytes;
      if (peak_one > plan.budget_bytes)
        plan.infeasible = ExplainInfeasible(at_one, peak_one, options_);
    }
    return OkStatus();
  }

  // The candidates table around the chosen m.
  Status FillCandidates(TrainingPlan& plan, int64_t m, int64_t largest) {
    if (!has_batch_) {
      plan.candidates.push_back(plan.chosen);
      return OkStatus();
    }
    const std::optional<int64_t>& rank_batch = limits_.rank_batch;
    for (int64_t cm :
         CandidateMicroBatches(m, options_.micro_batch ? 0 : largest, options_.max_candidates)) {
      int64_t ck = rank_batch ? CeilDiv(*rank_batch, cm) : 1;
      if (cm == m) {
        plan.candidates.push_back(plan.chosen);
        continue;
      }
      // With a requested G, candidates that overshoot it are not comparable per sample.
      if (rank_batch && cm * ck != *rank_batch && cm <= largest) continue;
      // A searched row is a micro-batch the search offers: one the shapes refuse is an error,
      // as the choice would be. Beside a pinned micro-batch the rows are only for comparison,
      // and one at which the shapes do not hold is left out of the table.
      if (Status held = ShapesHold(cm); !held.ok()) {
        if (searched_) return held.error();
        continue;
      }
      MEMPLAN_TRY(PlanCandidate c, EvaluateKept(plan, cm, ck));
      plan.candidates.push_back(c);
    }
    return OkStatus();
  }

  // The chosen plan in full: its timeline under the planner's model (the exact lower bound is
  // the candidate's exact_peak_bytes).
  Status SimulateChosen(TrainingPlan& plan, int64_t m, int64_t k) {
    plan.bindings = evaluator_.BindingsFor(m);
    SimulationOptions sim;
    sim.accumulation_steps = k;
    MEMPLAN_TRY(plan.simulation, evaluator_.SimulateAt(m, sim, options_.allocator));
    MEMPLAN_TRY(plan.time, evaluator_.EstimateTime(m, k, plan.simulation.buffer_bytes));
    plan.program = evaluator_.TakeProgram();
    plan.program.accumulation_steps = k;
    return OkStatus();
  }

 private:
  // k matters for memory only through k > 1 (the persistent gradients exist during the second
  // micro-batch's forward), so the fit test uses the k the plan would have.
  int64_t KAt(int64_t m) const {
    const std::optional<int64_t>& rank_batch = limits_.rank_batch;
    const int64_t fit_k = rank_batch ? 2 : 1;
    const int64_t k = rank_batch ? std::max<int64_t>(1, CeilDiv(*rank_batch, m)) : 1;
    return std::min(k, fit_k);
  }
  // The micro-batches tried are screened (MicroBatchShapeCheck); the plan's own is propagated.
  Status ShapesHold(int64_t m, bool exact = false) {
    return shapes_ && has_batch_ ? shapes_->At(m, searched_, exact) : OkStatus();
  }
  // The peak on a device of `limit` bytes: the headroom search asks at budget - headroom, so a
  // plan that fits only by releasing cached segments is judged by the device it must fit in, as
  // its fit tests (FitsAt) are.
  Expected<int64_t> PeakAt(int64_t m, int64_t limit) {
    MEMPLAN_RETURN_IF_ERROR(ShapesHold(m));
    MEMPLAN_TRY(PlanCandidate c, evaluator_.Evaluate(m, KAt(m), limit, /*with_time=*/false));
    return c.peak_bytes;
  }
  Expected<int64_t> LivePeakAt(int64_t m) {
    MEMPLAN_RETURN_IF_ERROR(ShapesHold(m));
    return evaluator_.LivePeakAt(m, KAt(m));
  }
  Expected<bool> FitsAt(int64_t m, int64_t limit) {
    MEMPLAN_RETURN_IF_ERROR(ShapesHold(m));
    return evaluator_.FitsAt(m, KAt(m), limit);
  }
  // A micro-batch chosen under the headroom is reported on the device it was judged on (budget -
  // headroom): where it fits only because PyTorch releases cached segments before failing, what
  // it reserves there is the replay at that capacity, so the headroom stays free.
  Expected<PlanCandidate> EvaluateKept(const TrainingPlan& plan, int64_t cm, int64_t ck) {
    if (!options_.micro_batch && plan.headroom_bytes > 0) {
      MEMPLAN_TRY(PlanCandidate within,
                  evaluator_.Evaluate(cm, ck, plan.budget_bytes - plan.headroom_bytes));
      if (within.fits) return within;
    }
    return evaluator_.Evaluate(cm, ck, plan.budget_bytes);
  }

  const PlannerOptions& options_;
  const PlanLimits& limits_;
  CandidateEvaluator& evaluator_;
  const bool has_batch_;
  const bool searched_;
  std::shared_ptr<MicroBatchShapeCheck> shapes_;
};

}  // namespace

Expected<PlanLimits> PlanLimitsOf(const PlannerOptions& options) {
  PlanLimits limits;
  limits.budget_bytes =
      options.gpu.memory_bytes - options.gpu.context_bytes - options.reserve_bytes;
  if (limits.budget_bytes <= 0) {
    return MakeError("no memory left for training: GPU " + options.gpu.name + " has " +
                     std::to_string(options.gpu.memory_bytes) + " bytes, the CUDA context takes " +
                     std::to_string(options.gpu.context_bytes) + " and the reserve " +
                     std::to_string(options.reserve_bytes));
  }
  if (options.micro_batch && *options.micro_batch < 1)
    return MakeError("the micro-batch must be at least 1");
  if (!(options.headroom.fraction >= 0 && options.headroom.fraction <= kMaxHeadroomFraction) ||
      options.headroom.bytes < 0)
    return MakeError("the headroom must be between 0 and 50% of the budget");
  limits.headroom_bytes = options.headroom.BytesOf(limits.budget_bytes);
  if (limits.headroom_bytes > limits.budget_bytes / 2)
    return MakeError("the headroom (" + std::to_string(limits.headroom_bytes) +
                     " bytes) is more than half of the budget (" +
                     std::to_string(limits.budget_bytes) + " bytes)");
  if (options.global_batch && *options.global_batch < 1)
    return MakeError("the global batch must be at least 1");
  if (options.global_batch.value_or(1) > kMaxPlannedBatch ||
      options.micro_batch.value_or(1) > kMaxPlannedBatch)
    return MakeError("the global batch and the micro-batch must be at most 2^62");

  // Data parallel: each of N ranks runs m x k samples, so the planner searches the per-rank batch
  // G / N, which must be whole for the global batch to stay exact.
  limits.ranks = options.program.data_parallel ? options.program.data_parallel->ranks : 1;
  if (limits.ranks < 1) return MakeError("the number of GPUs must be at least 1");
  if (options.global_batch && *options.global_batch % limits.ranks != 0) {
    return MakeError("global batch " + std::to_string(*options.global_batch) +
                     " is not reachable on " + std::to_string(limits.ranks) +
                     " GPUs: micro-batch x accumulation x GPUs must equal it, so it must be a "
                     "multiple of " +
                     std::to_string(limits.ranks));
  }
  if (options.global_batch) limits.rank_batch = *options.global_batch / limits.ranks;
  return limits;
}

Expected<TrainingPlan> PlanOn(const Graph& graph, const PlannerOptions& options,
                              const PlanLimits& limits, CandidateEvaluator& evaluator) {
  TrainingPlan plan;
  plan.micro_batch_fixed = options.micro_batch.has_value();
  plan.budget_bytes = limits.budget_bytes;
  plan.headroom_bytes = limits.headroom_bytes;
  MicroBatchSearch search(graph, options, limits, evaluator);

  int64_t largest = 1, recommended = 1;
  MEMPLAN_RETURN_IF_ERROR(search.SearchLargest(plan, largest, recommended));
  if (largest == 0) {
    MEMPLAN_RETURN_IF_ERROR(search.NothingFits(plan));
    return plan;
  }
  // Choose m and k under the headroom: from here on `largest` is the recommended limit.
  largest = recommended;
  int64_t m = largest;
  int64_t k = 1;
  if (!limits.rank_batch && !options.micro_batch && search.has_batch() &&
      options.knee_tolerance > 0) {
    MEMPLAN_TRY(m, search.KneeMicroBatch(plan, largest));
  }
  if (limits.rank_batch) search.SplitGlobalBatch(plan, largest, m, k);
  MEMPLAN_RETURN_IF_ERROR(search.EvaluateChosen(plan, m, k));
  MEMPLAN_RETURN_IF_ERROR(search.FillCandidates(plan, m, largest));
  MEMPLAN_RETURN_IF_ERROR(search.SimulateChosen(plan, m, k));
  return plan;
}

}  // namespace memplan::planning
