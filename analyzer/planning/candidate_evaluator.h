#pragma once
// CandidateEvaluator: the (micro-batch, accumulation) candidates of one derived program,
// simulated and timed with memoised answers, and the derivation it plans (EvaluatorFor). Internal
// to analyzer/planning/: the micro-batch search (micro_batch_search.h) and FitProbe read it.

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <limits>
#include <map>
#include <memory>
#include <optional>
#include <tuple>
#include <utility>

#include "analyzer/cost/collective_cost.h"
#include "analyzer/planning/fit_probe.h"
#include "analyzer/planning/planner.h"
#include "analyzer/simulation/allocation_script.h"
#include "analyzer/simulation/batch_linear_sizes.h"
#include "analyzer/simulation/caching_allocator.h"
#include "analyzer/simulation/caching_peak_memo.h"
#include "analyzer/simulation/exact_allocator.h"
#include "analyzer/simulation/expandable_allocator.h"
#include "analyzer/text/memory_size.h"
#include "graph/bound_shape_check.h"
#include "graph/checked_math.h"

namespace memplan::planning {

// REQUIRES: a >= 0, b > 0. Never forms a + b, which overflows for a global batch near 2^63.
inline int64_t CeilDiv(int64_t a, int64_t b) { return a / b + (a % b != 0); }

// The per-node execution dtypes the program chose (mixed precision), for the cost model.
inline std::vector<DType> ComputeDTypes(const Graph& graph, const TrainingProgram& program) {
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
  // `program` may be shared with a DerivationCache (never changed here).
  CandidateEvaluator(const Graph& graph, const PlannerOptions& options,
                     std::shared_ptr<TrainingProgram> program, RecomputeLabel recompute_label)
      : graph_(graph),
        options_(options),
        shared_program_(std::move(program)),
        program_(*shared_program_),
        recompute_label_(recompute_label),
        compute_dtypes_(ComputeDTypes(graph, program_)),
        tape_(ProgramTape::Of(program_)),
        sizes_(BatchLinearSizes::Of(program_, options_.bindings, program_.batch_symbol)),
        ranks_(program_.data_parallel_ranks) {}

  const TrainingProgram& program() const { return program_; }
  // The program for the plan: moved out, or copied when the evaluator is kept (a fit probe's) or
  // the program is shared (a DerivationCache's).
  TrainingProgram TakeProgram() {
    if (keep_program_ || shared_program_.use_count() > 1) return program_;
    return std::move(*shared_program_);
  }
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
  std::shared_ptr<TrainingProgram> shared_program_;
  const TrainingProgram& program_;  // *shared_program_
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

// The label of a plan of `program` under `options`: the search's, else none or custom.
RecomputeLabel RecomputeLabelOf(const PlannerOptions& options, const TrainingProgram& program);

// The program PlanTraining plans (derived with k = 1: the planner chooses k) in its evaluator.
Expected<std::unique_ptr<CandidateEvaluator>> EvaluatorFor(const Graph& graph,
                                                           const PlannerOptions& options);

}  // namespace memplan::planning
