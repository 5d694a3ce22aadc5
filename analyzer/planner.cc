#include "analyzer/planner.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <utility>

#include "analyzer/caching_allocator.h"
#include "analyzer/exact_allocator.h"

namespace memplan {

std::string_view AllocatorKindName(AllocatorKind kind) {
  return kind == AllocatorKind::kCaching ? "caching" : "exact";
}

Expected<AllocatorKind> ParseAllocatorKind(std::string_view text) {
  if (text == "caching") return AllocatorKind::kCaching;
  if (text == "exact") return AllocatorKind::kExact;
  return MakeError("--allocator: expected caching or exact, got '" + std::string(text) + "'");
}

namespace {

int64_t CeilDiv(int64_t a, int64_t b) { return (a + b - 1) / b; }

// The per-node execution dtypes the program chose (mixed precision), for the cost model.
std::vector<DType> ComputeDTypes(const Graph& graph, const TrainingProgram& program) {
  std::vector<DType> dtypes(graph.num_nodes(), DType::kUndefined);
  for (const Value& v : graph.values())
    if (v.producer.valid() && dtypes[v.producer.index()] == DType::kUndefined)
      dtypes[v.producer.index()] = v.dtype;
  for (const Step& step : program.steps)
    if (step.kind == StepKind::kForward && step.node.valid() &&
        step.compute_dtype != DType::kUndefined)
      dtypes[step.node.index()] = step.compute_dtype;
  return dtypes;
}

// Evaluates (m, k) candidates of one derived program. Mutable state of the search lives here;
// PlanTraining is the facade.
//
// The search asks about the same m several times (the fit test, the candidates table, the chosen
// plan), so the evaluator memoises what does not depend on more than it must:
//  * the simulation per (m, min(k, 2)): the simulator replays at most two micro-batches (later
//    ones repeat the second exactly, analyzer/simulator.h), so every k >= 2 has the same memory;
//  * the per-node roofline times per m: they depend on the bindings, not on k.
// Both are pure functions of their keys, so the answers are those of re-evaluating.
class CandidateEvaluator {
 public:
  CandidateEvaluator(const Graph& graph, const PlannerOptions& options, TrainingProgram program,
                     RecomputeLabel recompute_label)
      : graph_(graph),
        options_(options),
        program_(std::move(program)),
        recompute_label_(recompute_label),
        compute_dtypes_(ComputeDTypes(graph, program_)) {}

  const TrainingProgram& program() const { return program_; }
  TrainingProgram TakeProgram() { return std::move(program_); }

  Bindings BindingsFor(int64_t m) const {
    Bindings b = options_.bindings;
    if (program_.batch_symbol) b.Bind(*program_.batch_symbol, m);
    return b;
  }

  // Peak under the planner's allocator model and the exact live bytes; the candidate's time
  // unless `with_time` is false (the fit test of the micro-batch search needs memory only, and
  // the roofline estimate of every node costs as much as the simulation).
  Expected<PlanCandidate> Evaluate(int64_t m, int64_t k, int64_t budget, bool with_time = true) {
    MEMPLAN_TRY(const SimulationResult* result, MemoryOf(m, k));
    PlanCandidate c;
    c.micro_batch = m;
    c.accumulation_steps = k;
    c.global_batch = m * k;
    c.precision = program_.precision;
    c.recompute = recompute_label_;
    c.exact_peak_bytes = result->peak_bytes;
    c.peak_bytes = options_.allocator == AllocatorKind::kCaching ? result->peak_reserved_bytes
                                                                 : result->peak_bytes;
    c.fits = c.peak_bytes <= budget;
    if (!with_time) return c;
    MEMPLAN_TRY(StepTimeEstimate time, EstimateTime(m, k, result->buffer_bytes));
    c.step_seconds = time.step_seconds;
    c.samples_per_second =
        time.step_seconds > 0 ? static_cast<double>(c.global_batch) / time.step_seconds : 0;
    return c;
  }

  Expected<SimulationResult> SimulateWith(const Bindings& bindings, const SimulationOptions& sim,
                                          AllocatorKind kind) const {
    if (kind == AllocatorKind::kCaching) {
      CachingAllocator caching;
      return Simulate(program_, bindings, caching, sim);
    }
    ExactAllocator exact;
    return Simulate(program_, bindings, exact, sim);
  }

  Expected<StepTimeEstimate> EstimateTime(int64_t m, int64_t k,
                                          const std::vector<int64_t>& buffer_bytes) {
    MEMPLAN_TRY(const std::vector<NodeTime>* node_times, NodeTimesOf(m));
    StepCostInputs inputs;
    inputs.accumulation_steps = k;
    inputs.recomputed_nodes = program_.recomputed;
    // The optimizer step streams every parameter copy, gradient and state: it reads masters,
    // gradients and states and writes masters, states and working copies.
    for (const ParameterBuffers& p : program_.parameters) {
      auto bytes = [&](BufferId id) { return id.valid() ? buffer_bytes[id.index()] : 0; };
      inputs.gradient_bytes += bytes(p.gradient);
      int64_t states = 0;
      for (BufferId s : p.optimizer_states) states += bytes(s);
      inputs.optimizer_bytes += 2 * bytes(p.master) + bytes(p.gradient) + 2 * states +
                                bytes(p.working) + 2 * bytes(p.master_gradient);
    }
    return EstimateStepTime(*node_times, inputs, options_.gpu, options_.cost);
  }

 private:
  // The planner's-allocator simulation at (m, k) without a timeline, memoised per (m, min(k, 2)).
  Expected<const SimulationResult*> MemoryOf(int64_t m, int64_t k) {
    const std::pair<int64_t, int64_t> key(m, std::min<int64_t>(k, 2));
    auto it = simulations_.find(key);
    if (it == simulations_.end()) {
      SimulationOptions sim;
      sim.accumulation_steps = key.second;
      sim.record_timeline = false;
      MEMPLAN_TRY(SimulationResult result, SimulateWith(BindingsFor(m), sim, options_.allocator));
      it = simulations_.emplace(key, std::move(result)).first;
    }
    return &it->second;
  }

  Expected<const std::vector<NodeTime>*> NodeTimesOf(int64_t m) {
    auto it = node_times_.find(m);
    if (it == node_times_.end()) {
      MEMPLAN_TRY(
          std::vector<NodeTime> times,
          EstimateNodeTimes(graph_, options_.gpu, BindingsFor(m), compute_dtypes_, options_.cost));
      it = node_times_.emplace(m, std::move(times)).first;
    }
    return &it->second;
  }

  const Graph& graph_;
  const PlannerOptions& options_;
  TrainingProgram program_;
  RecomputeLabel recompute_label_;
  std::vector<DType> compute_dtypes_;
  std::map<std::pair<int64_t, int64_t>, SimulationResult> simulations_;
  std::map<int64_t, std::vector<NodeTime>> node_times_;
};

// The largest m in [1, cap] with fits(m), assuming memory grows with m; 0 when m = 1 does not fit.
template <class Fits>
Expected<int64_t> LargestFitting(int64_t cap, Fits fits) {
  MEMPLAN_TRY(bool one, fits(1));
  if (!one) return int64_t{0};
  int64_t lo = 1;  // fits
  int64_t hi = 0;  // first known not to fit (0 = none yet)
  while (hi == 0 && lo < cap) {
    int64_t next = std::min(cap, lo * 2);
    MEMPLAN_TRY(bool ok, fits(next));
    if (ok) {
      lo = next;
    } else {
      hi = next;
    }
  }
  if (hi == 0) return lo;
  while (hi - lo > 1) {
    int64_t mid = lo + (hi - lo) / 2;
    MEMPLAN_TRY(bool ok, fits(mid));
    if (ok) {
      lo = mid;
    } else {
      hi = mid;
    }
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

}  // namespace

Expected<TrainingPlan> PlanTraining(const Graph& graph, const PlannerOptions& options) {
  TrainingPlan plan;
  plan.micro_batch_fixed = options.micro_batch.has_value();
  plan.budget_bytes = options.gpu.memory_bytes - options.gpu.context_bytes - options.reserve_bytes;
  if (plan.budget_bytes <= 0) {
    return MakeError("no memory left for training: GPU " + options.gpu.name + " has " +
                     std::to_string(options.gpu.memory_bytes) + " bytes, the CUDA context takes " +
                     std::to_string(options.gpu.context_bytes) + " and the reserve " +
                     std::to_string(options.reserve_bytes));
  }
  if (options.micro_batch && *options.micro_batch < 1)
    return MakeError("the micro-batch must be at least 1");
  if (options.global_batch && *options.global_batch < 1)
    return MakeError("the global batch must be at least 1");

  ProgramOptions program_options = options.program;
  program_options.accumulation_steps = 1;
  MEMPLAN_TRY(TrainingProgram program, DeriveTrainingProgram(graph, program_options));
  RecomputeLabel label = options.recompute_label ? *options.recompute_label
                         : program.recomputed.empty() ? RecomputeLabel::kNone
                                                      : RecomputeLabel::kCustom;
  CandidateEvaluator evaluator(graph, options, std::move(program), label);
  const bool has_batch = evaluator.program().batch_symbol.has_value();
  // Every symbol but the batch must be bound: check once with m = 1 so the error names it.
  MEMPLAN_RETURN_IF_ERROR(EvaluateBufferSizes(evaluator.program(), evaluator.BindingsFor(1)));

  const int64_t budget = plan.budget_bytes;
  // k matters for memory only through k > 1 (the persistent gradients exist during the second
  // micro-batch's forward), so the fit test uses the k the plan would have.
  const int64_t fit_k = options.global_batch ? 2 : 1;
  auto fits = [&](int64_t m) -> Expected<bool> {
    int64_t k = options.global_batch ? std::max<int64_t>(1, CeilDiv(*options.global_batch, m)) : 1;
    MEMPLAN_TRY(PlanCandidate c,
                evaluator.Evaluate(m, std::min(k, fit_k), budget, /*with_time=*/false));
    return c.fits;
  };

  int64_t largest = 1;
  if (options.micro_batch) {
    largest = *options.micro_batch;
  } else if (has_batch) {
    MEMPLAN_TRY(largest, LargestFitting(options.max_micro_batch, fits));
    plan.micro_batch_capped = largest == options.max_micro_batch;
  }
  plan.largest_fitting_micro_batch = largest;

  if (largest == 0) {
    // Nothing fits: report m = 1 and what would be needed.
    MEMPLAN_TRY(PlanCandidate one, evaluator.Evaluate(1, 1, budget));
    SimulationOptions sim;
    MEMPLAN_TRY(SimulationResult at_one,
                evaluator.SimulateWith(evaluator.BindingsFor(1), sim, options.allocator));
    plan.feasible = false;
    plan.chosen = one;
    plan.infeasible = ExplainInfeasible(at_one, one.peak_bytes, options);
    plan.candidates = {one};
    plan.bindings = evaluator.BindingsFor(1);
    MEMPLAN_TRY(plan.time, evaluator.EstimateTime(1, 1, at_one.buffer_bytes));
    plan.simulation = std::move(at_one);
    plan.program = evaluator.TakeProgram();
    return plan;
  }

  // Choose m and k.
  int64_t m = largest;
  int64_t k = 1;
  if (options.global_batch) {
    const int64_t g = *options.global_batch;
    plan.global_batch_requested = true;
    plan.requested_global_batch = g;
    if (options.micro_batch) {
      m = *options.micro_batch;
      k = CeilDiv(g, m);
    } else if (g <= largest) {
      m = g;
    } else {
      int64_t divisor = LargestDivisorAtMost(g, largest);
      if (static_cast<double>(divisor) >=
          options.min_divisor_fraction * static_cast<double>(largest)) {
        m = divisor;
        k = g / divisor;
      } else {
        m = largest;
        k = CeilDiv(g, largest);
      }
    }
    plan.global_batch_exact = m * k == g;
  }

  MEMPLAN_TRY(plan.chosen, evaluator.Evaluate(m, k, budget));
  plan.feasible = plan.chosen.fits;
  if (!plan.feasible && options.micro_batch) {
    // A fixed m that does not fit: still report it (exit 1 in the CLI) with what would fit.
    SimulationOptions sim;
    MEMPLAN_TRY(SimulationResult at_one,
                evaluator.SimulateWith(evaluator.BindingsFor(1), sim, options.allocator));
    int64_t peak_one = options.allocator == AllocatorKind::kCaching ? at_one.peak_reserved_bytes
                                                                    : at_one.peak_bytes;
    if (peak_one > budget) plan.infeasible = ExplainInfeasible(at_one, peak_one, options);
  }

  // The candidates table.
  if (has_batch) {
    for (int64_t cm :
         CandidateMicroBatches(m, options.micro_batch ? 0 : largest, options.max_candidates)) {
      int64_t ck = options.global_batch ? CeilDiv(*options.global_batch, cm) : 1;
      if (cm == m) {
        plan.candidates.push_back(plan.chosen);
        continue;
      }
      // With a requested G, candidates that overshoot it are not comparable per sample.
      if (options.global_batch && cm * ck != *options.global_batch && cm <= largest) continue;
      MEMPLAN_TRY(PlanCandidate c, evaluator.Evaluate(cm, ck, budget));
      plan.candidates.push_back(c);
    }
  } else {
    plan.candidates.push_back(plan.chosen);
  }

  // The chosen plan in full: its timeline under the planner's model (the exact lower bound is
  // the candidate's exact_peak_bytes).
  plan.bindings = evaluator.BindingsFor(m);
  SimulationOptions sim;
  sim.accumulation_steps = k;
  MEMPLAN_TRY(plan.simulation, evaluator.SimulateWith(plan.bindings, sim, options.allocator));
  MEMPLAN_TRY(plan.time, evaluator.EstimateTime(m, k, plan.simulation.buffer_bytes));
  plan.program = evaluator.TakeProgram();
  plan.program.accumulation_steps = k;
  return plan;
}

}  // namespace memplan
