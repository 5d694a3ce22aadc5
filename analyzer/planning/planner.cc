#include "analyzer/planning/planner.h"

#include "graph/checked_math.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <limits>
#include <map>
#include <optional>
#include <tuple>
#include <utility>

#include "analyzer/cost/collective_cost.h"
#include "analyzer/planning/fit_probe.h"
#include "analyzer/simulation/allocation_script.h"
#include "analyzer/simulation/batch_linear_sizes.h"
#include "analyzer/simulation/caching_allocator.h"
#include "analyzer/simulation/caching_peak_memo.h"
#include "analyzer/simulation/exact_allocator.h"
#include "analyzer/simulation/expandable_allocator.h"
#include "analyzer/text/memory_size.h"
#include "graph/bound_shape_check.h"

namespace memplan {

Expected<AllocatorKind> ParseAllocatorKind(std::string_view text) {
  if (std::optional<AllocatorKind> kind = FindName(kAllocatorKindNames, text)) return *kind;
  return MakeError("--allocator: expected caching, expandable or exact, got '" + std::string(text) +
                   "'");
}

Expected<Headroom> ParseHeadroom(std::string_view text) {
  Headroom headroom;
  if (text == "0") return headroom;
  if (!text.empty() && text.back() == '%') {
    const std::string number(text.substr(0, text.size() - 1));
    char* end = nullptr;
    const double percent = std::strtod(number.c_str(), &end);
    if (number.empty() || end != number.c_str() + number.size() || !std::isfinite(percent))
      return MakeError("expected a percentage such as 5% or a size such as 1G, got '" +
                       std::string(text) + "'");
    if (percent < 0 || percent > kMaxHeadroomFraction * 100)
      return MakeError("must be between 0% and 50% of the budget, got '" + std::string(text) + "'");
    headroom.fraction = percent / 100;
    return headroom;
  }
  if (!text.empty() && text.front() == '-')
    return MakeError("must not be negative, got '" + std::string(text) + "'");
  MEMPLAN_TRY(headroom.bytes, ParseMemorySize(text));
  return headroom;
}

Expected<double> ParseKneeTolerance(std::string_view text) {
  if (text == "0") return 0.0;
  const bool percent = !text.empty() && text.back() == '%';
  const std::string number(percent ? text.substr(0, text.size() - 1) : text);
  char* end = nullptr;
  const double value = std::strtod(number.c_str(), &end);
  if (!percent || number.empty() || end != number.c_str() + number.size() || !std::isfinite(value))
    return MakeError(
        "expected a percentage such as 2% (0 for the largest micro-batch that fits), "
        "got '" +
        std::string(text) + "'");
  if (value < 0 || value >= 50)
    return MakeError("must be at least 0% and below 50%, got '" + std::string(text) + "'");
  return value / 100;
}

CollectiveCostOptions ResolvedCollectiveOptions(const PlannerOptions& options) {
  CollectiveCostOptions resolved = options.collectives;
  if (resolved.intra_node.bytes_per_second <= 0)
    resolved.intra_node = DefaultIntraNodeLink(options.gpu);
  if (resolved.inter_node.bytes_per_second <= 0) resolved.inter_node = DefaultInterNodeLink();
  if (options.program.data_parallel) resolved.nodes = options.program.data_parallel->nodes;
  return resolved;
}

OffloadCostOptions ResolvedOffloadCostOptions(const PlannerOptions& options) {
  OffloadCostOptions resolved = options.offload_cost;
  if (resolved.host_link.bytes_per_second <= 0) resolved.host_link = DefaultHostLink(options.gpu);
  return resolved;
}

namespace {

// REQUIRES: a >= 0, b > 0. Never forms a + b, which overflows for a global batch near 2^63.
int64_t CeilDiv(int64_t a, int64_t b) { return a / b + (a % b != 0); }

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
//  * the simulated peaks per (m, min(k, 2)): the simulator replays at most two micro-batches
//    (later ones repeat the second exactly, analyzer/simulation/simulator.h), so every k >= 2 has
//    the same memory;
//  * the per-node roofline times per m: they depend on the bindings, not on k (and the op
//    registry's symbolic costs behind them on nothing but the graph: analysed once).
// Both are pure functions of their keys, so the answers are those of re-evaluating.
class CandidateEvaluator {
 public:
  CandidateEvaluator(const Graph& graph, const PlannerOptions& options, TrainingProgram program,
                     RecomputeLabel recompute_label)
      : graph_(graph),
        options_(options),
        program_(std::move(program)),
        recompute_label_(recompute_label),
        compute_dtypes_(ComputeDTypes(graph, program_)),
        tape_(ProgramTape::Of(program_)),
        sizes_(BatchLinearSizes::Of(program_, options_.bindings, program_.batch_symbol)),
        ranks_(program_.data_parallel_ranks) {}

  const TrainingProgram& program() const { return program_; }
  // The program for the plan: moved out, or copied when the evaluator is kept (a fit probe's).
  TrainingProgram TakeProgram() { return keep_program_ ? program_ : std::move(program_); }
  void set_keep_program(bool keep) { keep_program_ = keep; }
  RecomputeLabel recompute_label() const { return recompute_label_; }
  // The label the candidates carry: a fit probe's program planned under its search's label.
  void set_recompute_label(RecomputeLabel label) { recompute_label_ = label; }

  Bindings BindingsFor(int64_t m) const {
    Bindings b = options_.bindings;
    if (program_.batch_symbol) b.Bind(*program_.batch_symbol, m);
    return b;
  }

  // Peak under the planner's allocator model and the exact live bytes; the candidate's time
  // unless `with_time` is false (the fit test of the micro-batch search needs memory only, and
  // the roofline estimate of every node costs as much as the simulation).
  Expected<PlanCandidate> Evaluate(int64_t m, int64_t k, int64_t budget, bool with_time = true) {
    MEMPLAN_TRY(const ScriptPeaks* result, MemoryOf(m, k));
    PlanCandidate c;
    c.micro_batch = m;
    c.accumulation_steps = k;
    c.global_batch = m * k * ranks_;  // every data-parallel rank runs m x k samples
    c.precision = program_.precision;
    c.recompute = recompute_label_;
    c.exact_peak_bytes = result->live_bytes;
    c.peak_bytes =
        FitsReservedBytes(options_.allocator) ? result->reserved_bytes : result->live_bytes;
    c.fits = c.peak_bytes <= budget;
    if (!c.fits && options_.allocator == AllocatorKind::kCaching && c.exact_peak_bytes <= budget) {
      // Over the budget only by cached blocks: PyTorch frees them before it fails
      // (ReservedUnderCapacity); the plan fits when nothing is refused, and what it reserves on
      // this GPU is that replay's peak.
      MEMPLAN_TRY(const std::optional<int64_t> within, ReservedUnderCapacity(m, k, budget));
      if (within) {
        c.peak_bytes = *within;
        c.fits = true;
      }
    }
    if (!with_time) return c;
    MEMPLAN_TRY(const std::vector<int64_t> sizes, SizesAt(m));
    MEMPLAN_TRY(StepTimeEstimate time, EstimateTime(m, k, sizes));
    c.step_seconds = time.step_seconds;
    c.samples_per_second =
        time.step_seconds > 0 ? static_cast<double>(c.global_batch) / time.step_seconds : 0;
    return c;
  }

  // The simulation at micro-batch m: Simulate(program, BindingsFor(m), ...), with the sizes
  // evaluated from their linear forms.
  Expected<SimulationResult> SimulateAt(int64_t m, SimulationOptions sim,
                                        AllocatorKind kind) const {
    sim.tape = &tape_;
    MEMPLAN_TRY(std::vector<int64_t> sizes, SizesAt(m));
    return SimulateSized(program_, std::move(sizes), ModelOf(kind), sim);
  }

  // EvaluateBufferSizes(program, BindingsFor(m)).
  Expected<std::vector<int64_t>> SizesAt(int64_t m) const {
    return sizes_.At(program_, BindingsFor(m), m);
  }

  Expected<StepTimeEstimate> EstimateTime(int64_t m, int64_t k,
                                          const std::vector<int64_t>& buffer_bytes) {
    MEMPLAN_TRY(const std::vector<NodeTime>* node_times, NodeTimesOf(m));
    StepCostInputs inputs;
    inputs.accumulation_steps = k;
    inputs.recomputed_nodes = program_.recomputed;
    // The optimizer step streams every parameter copy, gradient and state: it reads masters,
    // gradients and states and writes masters, states and working copies. With the optimizer
    // offloaded it runs on the CPU instead (EstimateOffload below).
    const bool cpu_optimizer = OffloadsOptimizer(program_.offload);
    for (const ParameterBuffers& p : program_.parameters) {
      auto bytes = [&](BufferId id) { return id.valid() ? buffer_bytes[id.index()] : 0; };
      // Gradients the host accumulates (optimizer+params) add nothing on the GPU.
      if (p.gradient.valid() && !program_.buffer(p.gradient).on_host())
        inputs.gradient_bytes += bytes(p.gradient);
      if (cpu_optimizer) continue;
      int64_t states = 0;
      for (BufferId s : p.optimizer_states) states += bytes(s);
      inputs.optimizer_bytes += 2 * bytes(p.master) + bytes(p.gradient) + 2 * states +
                                bytes(p.working) + 2 * bytes(p.master_gradient);
    }
    StepTimeEstimate time = EstimateStepTime(*node_times, inputs, options_.gpu, options_.cost);
    if (program_.offload != OffloadMode::kNone) {
      // Host-link copies compute does not hide and the CPU optimizer step (offload_cost.h).
      const OffloadEstimate offload =
          EstimateOffload(program_, buffer_bytes, k, time, ResolvedOffloadCostOptions(options_));
      time.transfer_seconds = offload.exposed_transfer_seconds;
      time.transfer_total_seconds = offload.transfer_seconds;
      time.transfer_bytes = offload.transfer_bytes;
      time.host_optimizer_seconds = offload.host_optimizer_seconds;
      time.step_seconds += offload.exposed_transfer_seconds + offload.host_optimizer_seconds;
    }
    if (ranks_ > 1) {
      // Data parallel: the collectives compute does not hide (analyzer/cost/collective_cost.h).
      const CommunicationEstimate comm =
          EstimateCommunication(program_, k, time, ResolvedCollectiveOptions(options_));
      time.communication_seconds = comm.exposed_seconds;
      time.communication_total_seconds = comm.total_seconds;
      time.step_seconds += comm.exposed_seconds;
    }
    if (options_.tensor_parallel.enabled()) {
      MEMPLAN_TRY(const double tp, TensorParallelSeconds(m));
      time.communication_seconds += static_cast<double>(k) * tp;
      time.communication_total_seconds += static_cast<double>(k) * tp;
      time.step_seconds += static_cast<double>(k) * tp;
    }
    return time;
  }

 private:
  // --tp, per micro-batch: the group all-reduces every row-parallel output (forward) and every
  // column-parallel input gradient (backward) in the working dtype on the intra-node link. The
  // next op reads the result, so compute hides none of it (Megatron without sequence parallel).
  Expected<double> TensorParallelSeconds(int64_t m) const {
    const TensorParallelPlan& tp = options_.tensor_parallel;
    CollectiveCostOptions link = ResolvedCollectiveOptions(options_);
    link.nodes = 1;
    const int64_t element_bytes = program_.precision == Precision::kFp32 ? 4 : 2;
    const Bindings bindings = BindingsFor(m);
    double seconds = 0;
    for (const std::vector<Dim>* list : {&tp.forward_all_reduces, &tp.backward_all_reduces}) {
      for (const Dim& elements : *list) {
        MEMPLAN_TRY(int64_t n, elements.Evaluate(bindings));
        const std::optional<int64_t> bytes = CheckedMul(n, element_bytes);
        if (!bytes)
          return MakeError("a tensor-parallel all-reduce of " + std::to_string(n) +
                           " elements overflows 64-bit bytes");
        seconds += CollectiveSeconds(CollectiveKind::kAllReduce, *bytes, tp.degree, link);
      }
    }
    return seconds;
  }

  // The planner's-allocator peaks at (m, k), memoised per (m, min(k, 2)): the simulation's
  // allocation script (analyzer/simulation/allocation_script.h, recorded once per min(k, 2))
  // replayed at the sizes of m, which yields the simulation's peaks without its walk; under the
  // caching model a replay whose sizes round as an earlier one's reuses its peaks
  // (analyzer/simulation/caching_peak_memo.h).
  Expected<const ScriptPeaks*> MemoryOf(int64_t m, int64_t k) {
    const std::pair<int64_t, int64_t> key = MemoKey(m, k);
    auto it = simulations_.find(key);
    if (it == simulations_.end()) {
      MEMPLAN_TRY(const std::vector<int64_t> sizes, SizesAt(m));
      MEMPLAN_TRY(const AllocationScript* script, ScriptOf(key.second));
      const ScriptPeaks peaks =
          options_.allocator == AllocatorKind::kCaching
              ? MemoOf(key.second)
                    .PeaksAt(
                        *script, m, sizes, [this](int64_t at) { return SizesAt(at); }, caching_)
              : script->Replay(sizes, ModelOf(options_.allocator));
      it = simulations_.emplace(key, peaks).first;
    }
    return &it->second;
  }

 public:
  // Whether Evaluate(m, k, budget).fits, with as little of a replay as decides it: the peaks
  // already known answer it; a live peak over the budget fails it without the allocator model
  // (every model's peak is at least the live bytes); otherwise the replay stops at the first
  // sample past the budget (the peaks are maxima, so the rest cannot bring it back). A replay
  // that runs to the end is kept as MemoryOf's. The search's closing probes only ask this.
  Expected<bool> FitsAt(int64_t m, int64_t k, int64_t budget) {
    MEMPLAN_TRY(const bool fits, FitsUnconstrained(m, k, budget));
    if (fits || options_.allocator != AllocatorKind::kCaching) return fits;
    MEMPLAN_TRY(const int64_t live, LivePeakAt(m, k));
    if (live > budget) return false;
    MEMPLAN_TRY(const std::optional<int64_t> within, ReservedUnderCapacity(m, k, budget));
    return within.has_value();
  }

  // The caching model's reserved peak when the device holds `capacity` bytes, nullopt when a
  // request is refused even so. PyTorch's rule (c10/cuda/CUDACachingAllocator.cpp, malloc):
  // when cudaMalloc of a new segment fails, release_cached_blocks() returns every fully free
  // cached segment to the device and the allocation is retried; only a second failure is the
  // out-of-memory error. So the unconstrained reserved peak (Evaluate's first figure: what a
  // larger card shows in max_memory_reserved) over-states what a run needs wherever the excess
  // is segments nothing lives in at that moment.
  Expected<std::optional<int64_t>> ReservedUnderCapacity(int64_t m, int64_t k, int64_t capacity) {
    const std::pair<int64_t, int64_t> key = MemoKey(m, k);
    const std::tuple<int64_t, int64_t, int64_t> memo{key.first, key.second, capacity};
    if (auto it = capacity_peaks_.find(memo); it != capacity_peaks_.end()) return it->second;
    MEMPLAN_TRY(const std::vector<int64_t> sizes, SizesAt(m));
    MEMPLAN_TRY(const AllocationScript* script, ScriptOf(key.second));
    CachingAllocatorOptions limited = options_.alloc_config.caching;
    limited.capacity = capacity;
    CachingAllocator model(limited);
    const ScriptPeaks peaks = script->Replay(sizes, model);
    const std::optional<int64_t> within =
        peaks.refused ? std::nullopt : std::optional<int64_t>(peaks.reserved_bytes);
    capacity_peaks_.emplace(memo, within);
    return within;
  }

  // FitsAt under the unconstrained model: the reserved (or live) peak within `budget`.
  Expected<bool> FitsUnconstrained(int64_t m, int64_t k, int64_t budget) {
    const std::pair<int64_t, int64_t> key = MemoKey(m, k);
    const bool reserved = FitsReservedBytes(options_.allocator);
    auto fits = [&](const ScriptPeaks& peaks) {
      return (reserved ? peaks.reserved_bytes : peaks.live_bytes) <= budget;
    };
    if (auto it = simulations_.find(key); it != simulations_.end()) return fits(it->second);
    MEMPLAN_TRY(const std::vector<int64_t> sizes, SizesAt(m));
    MEMPLAN_TRY(const AllocationScript* script, ScriptOf(key.second));
    if (script->LivePeak(sizes) > budget) return false;
    if (!reserved) return true;  // the live peak is the peak
    constexpr int64_t kNoLiveLimit = std::numeric_limits<int64_t>::max();
    const std::optional<ScriptPeaks> peaks =
        options_.allocator == AllocatorKind::kCaching
            ? MemoOf(key.second)
                  .PeaksWithin(
                      *script, m, sizes, [this](int64_t at) { return SizesAt(at); }, caching_,
                      budget, kNoLiveLimit)
            : script->ReplayWithin(sizes, ModelOf(options_.allocator), budget, kNoLiveLimit);
    if (!peaks) return false;
    simulations_.emplace(key, *peaks);
    return fits(*peaks);
  }

  // A lower bound of Evaluate(m, k, ...).peak_bytes under every allocator model: the live peak,
  // which needs no allocator replay (a walk over the script's sizes, a fraction of a replay's
  // cost), or the known one.
  Expected<int64_t> LivePeakAt(int64_t m, int64_t k) {
    const std::pair<int64_t, int64_t> key = MemoKey(m, k);
    if (auto it = simulations_.find(key); it != simulations_.end()) return it->second.live_bytes;
    MEMPLAN_TRY(const std::vector<int64_t> sizes, SizesAt(m));
    MEMPLAN_TRY(const AllocationScript* script, ScriptOf(key.second));
    return script->LivePeak(sizes);
  }

 private:
  // Peaks are memoised per (m, min(k, 2)): memory depends on k only through k > 1.
  static std::pair<int64_t, int64_t> MemoKey(int64_t m, int64_t k) {
    MEMPLAN_CHECK(k >= 1);
    return {m, std::min<int64_t>(k, 2)};
  }

  // The allocation script of min(k, 2) micro-batches, recorded on first use.
  Expected<const AllocationScript*> ScriptOf(int64_t replayed) {
    std::optional<AllocationScript>& script = scripts_[static_cast<size_t>(replayed - 1)];
    if (!script) {
      MEMPLAN_TRY(
          AllocationScript recorded,
          AllocationScript::Record(program_, replayed, SimulationOptions{}.iterations, &tape_));
      script = std::move(recorded);
    }
    return &*script;
  }
  CachingPeakMemo& MemoOf(int64_t replayed) {
    return caching_memos_[static_cast<size_t>(replayed - 1)];
  }

  AllocatorModel& ModelOf(AllocatorKind kind) const {
    if (kind == AllocatorKind::kCaching) return caching_;
    if (kind == AllocatorKind::kExpandable) return expandable_;
    return exact_;
  }

  Expected<const std::vector<NodeTime>*> NodeTimesOf(int64_t m) {
    auto it = node_times_.find(m);
    if (it == node_times_.end()) {
      MEMPLAN_TRY(const NodeCosts* costs, node_costs_->Of(graph_));
      MEMPLAN_TRY(
          std::vector<NodeTime> times,
          EstimateNodeTimes(*costs, options_.gpu, BindingsFor(m), compute_dtypes_, options_.cost));
      it = node_times_.emplace(m, std::move(times)).first;
    }
    return &it->second;
  }

  const Graph& graph_;
  const PlannerOptions& options_;
  TrainingProgram program_;
  RecomputeLabel recompute_label_;
  bool keep_program_ = false;
  std::vector<DType> compute_dtypes_;
  ProgramTape tape_;        // the program's events laid out for its many walks
  BatchLinearSizes sizes_;  // the buffers' sizes as linear forms in m
  // The allocator models, reset by every simulation: one per evaluator keeps their arrays'
  // capacity from one simulation to the next instead of growing them anew each time.
  mutable CachingAllocator caching_{options_.alloc_config.caching};
  mutable ExpandableAllocator expandable_;
  mutable ExactAllocator exact_;
  int64_t ranks_ = 1;  // data-parallel ranks the program is one of
  std::map<std::pair<int64_t, int64_t>, ScriptPeaks> simulations_;
  // ReservedUnderCapacity's answers by (m, min(k, 2), capacity).
  std::map<std::tuple<int64_t, int64_t, int64_t>, std::optional<int64_t>> capacity_peaks_;
  std::optional<AllocationScript> scripts_[2];  // by min(k, 2) - 1, recorded on first use
  CachingPeakMemo caching_memos_[2];            // the caching model's peaks per script
  std::map<int64_t, std::vector<NodeTime>> node_times_;
  // The symbolic costs, analysed on first use: the options' shared cache, else its own.
  std::shared_ptr<NodeCostsCache> node_costs_ =
      options_.node_costs ? options_.node_costs : std::make_shared<NodeCostsCache>();
};

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

}  // namespace

Expected<const NodeCosts*> NodeCostsCache::Of(const Graph& graph) {
  MEMPLAN_CHECK(graph_ == nullptr || graph_ == &graph);
  if (!costs_) {
    MEMPLAN_TRY(NodeCosts costs, AnalyzeNodeCosts(graph));
    costs_ = std::move(costs);
    graph_ = &graph;
  }
  return &*costs_;
}

int64_t Headroom::BytesOf(int64_t budget) const {
  MEMPLAN_CHECK(budget >= 0 && fraction >= 0 && bytes >= 0);
  return bytes + static_cast<int64_t>(fraction * static_cast<double>(budget));
}

namespace {

// What PlanTraining judges every micro-batch against, validated once: the budget, the headroom
// and the per-rank batch a requested global batch leaves each GPU.
struct PlanLimits {
  int64_t budget_bytes = 0;
  int64_t headroom_bytes = 0;
  int64_t ranks = 1;
  std::optional<int64_t> rank_batch;
};

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

// The label of a plan of `program` under `options`: the search's, else none or custom.
RecomputeLabel RecomputeLabelOf(const PlannerOptions& options, const TrainingProgram& program) {
  return options.recompute_label      ? *options.recompute_label
         : program.recomputed.empty() ? RecomputeLabel::kNone
                                      : RecomputeLabel::kCustom;
}

// The program PlanTraining plans (derived with k = 1: the planner chooses k) in its evaluator.
Expected<std::unique_ptr<CandidateEvaluator>> EvaluatorFor(const Graph& graph,
                                                           const PlannerOptions& options) {
  ProgramOptions program_options = options.program;
  program_options.accumulation_steps = 1;
  MEMPLAN_TRY(TrainingProgram program, DeriveTrainingProgram(graph, program_options));
  const RecomputeLabel label = RecomputeLabelOf(options, program);
  auto evaluator = std::make_unique<CandidateEvaluator>(graph, options, std::move(program), label);
  // Every symbol but the batch must be bound: check once with m = 1 so the error names it.
  MEMPLAN_RETURN_IF_ERROR(evaluator->SizesAt(1));
  return evaluator;
}

}  // namespace

struct FitProbe::State {
  const Graph* graph = nullptr;
  PlannerOptions options;  // the evaluator reads them by reference
  std::unique_ptr<CandidateEvaluator> evaluator;
};

FitProbe::FitProbe(std::unique_ptr<State> state) : state_(std::move(state)) {}
FitProbe::~FitProbe() = default;

Expected<std::unique_ptr<FitProbe>> FitProbe::Derive(const Graph& graph,
                                                     const PlannerOptions& options) {
  auto state = std::make_unique<State>();
  state->graph = &graph;
  state->options = options;
  MEMPLAN_TRY(state->evaluator, EvaluatorFor(graph, state->options));
  return std::unique_ptr<FitProbe>(new FitProbe(std::move(state)));
}

Expected<FixedMicroBatchFit> FitProbe::At(int64_t micro_batch) {
  PlannerOptions fixed = state_->options;
  fixed.micro_batch = micro_batch;
  MEMPLAN_TRY(PlanLimits limits, PlanLimitsOf(fixed));
  // The accumulation PlanTraining gives a fixed m: k = ceil(G / m) per rank.
  const int64_t k = limits.rank_batch ? CeilDiv(*limits.rank_batch, micro_batch) : 1;
  MEMPLAN_TRY(PlanCandidate c, state_->evaluator->Evaluate(micro_batch, k, limits.budget_bytes,
                                                           /*with_time=*/false));
  FixedMicroBatchFit fit;
  fit.peak_bytes = c.peak_bytes;
  fit.budget_bytes = limits.budget_bytes;
  fit.headroom_bytes = limits.headroom_bytes;
  return fit;
}

namespace {

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

// PlanTraining's search on the program `evaluator` holds, with the limits of `options`.
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

}  // namespace

Expected<TrainingPlan> PlanTraining(const Graph& graph, const PlannerOptions& options) {
  MEMPLAN_TRY(const PlanLimits limits, PlanLimitsOf(options));
  MEMPLAN_TRY(std::unique_ptr<CandidateEvaluator> evaluator, EvaluatorFor(graph, options));
  return PlanOn(graph, options, limits, *evaluator);
}

Expected<TrainingPlan> FitProbe::Plan(std::optional<RecomputeLabel> label) {
  CandidateEvaluator& evaluator = *state_->evaluator;
  // The evaluator reads state_->options, which differ from `options` only in the label, which
  // only the candidates carry.
  PlannerOptions options = state_->options;
  options.recompute_label = label;
  MEMPLAN_TRY(const PlanLimits limits, PlanLimitsOf(options));
  const RecomputeLabel probe_label = evaluator.recompute_label();
  evaluator.set_recompute_label(RecomputeLabelOf(options, evaluator.program()));
  evaluator.set_keep_program(true);
  Expected<TrainingPlan> plan = PlanOn(*state_->graph, options, limits, evaluator);
  evaluator.set_keep_program(false);
  evaluator.set_recompute_label(probe_label);
  return plan;
}

}  // namespace memplan
