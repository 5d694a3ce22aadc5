#include "analyzer/planning/joint_search.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <memory>
#include <optional>

#include "analyzer/derivation/recompute_set.h"
#include "analyzer/planning/fit_probe.h"
#include "analyzer/precision/precision_placement.h"
#include "analyzer/recompute/baseline_planners.h"
#include "analyzer/recompute/chain_decomposition.h"
#include "analyzer/recompute/module_units.h"
#include "analyzer/recompute/optimal_chain_planner.h"
#include "graph/bound_shape_check.h"

namespace memplan {

namespace {

// The precisions the search tries: auto = fp32 plus the 16-bit format the GPU runs fastest
// (bf16 where supported: no loss scaling needed; fp16 otherwise).
// --amp-mode pure exists in bf16 only (GradScaler cannot unscale fp16 gradients), so auto tries
// bf16 for it on any GPU the CLI let through.
std::vector<Precision> PrecisionsToTry(PrecisionChoice choice, const GpuSpec& gpu, AmpMode mode) {
  switch (choice) {
    case PrecisionChoice::kFp32:
      return {Precision::kFp32};
    case PrecisionChoice::kFp16:
      return {Precision::kFp16};
    case PrecisionChoice::kBf16:
      return {Precision::kBf16};
    case PrecisionChoice::kAuto:
      return {Precision::kFp32,
              gpu.supports_bf16 || mode == AmpMode::kPure ? Precision::kBf16 : Precision::kFp16};
  }
  return {Precision::kFp32};
}

bool Better(const TrainingPlan& a, const TrainingPlan& b) {
  if (a.feasible != b.feasible) return a.feasible;
  if (!a.feasible) return a.chosen.peak_bytes < b.chosen.peak_bytes;
  return a.chosen.samples_per_second > b.chosen.samples_per_second;
}

bool SameConfiguration(const PlanCandidate& a, const PlanCandidate& b) {
  return a.precision == b.precision && a.recompute == b.recompute;
}

bool SameRow(const PlanCandidate& a, const PlanCandidate& b) {
  return SameConfiguration(a, b) && a.micro_batch == b.micro_batch &&
         a.accumulation_steps == b.accumulation_steps;
}

// The candidates table of a search over several configurations: the fitting candidates no other
// candidate beats on both memory and throughput, each configuration's chosen plan (so every plan
// the "Why" sentence names is a row of the table), and the first micro-batch of the chosen
// configuration that does not fit, to show where its memory runs out. Left out: rows of other
// configurations that do not fit (a non-fitting fp32 row says nothing about an fp16 plan) and
// m=1 rows when a larger m fits (on the frontier only because nothing uses less memory).
std::vector<PlanCandidate> CandidatesTable(const std::vector<PlanCandidate>& all,
                                           const std::vector<PlanCandidate>& configuration_picks,
                                           const PlanCandidate& chosen) {
  const bool larger_fits = std::any_of(
      all.begin(), all.end(), [](const PlanCandidate& c) { return c.fits && c.micro_batch > 1; });
  std::vector<PlanCandidate> table;
  auto add = [&table](const PlanCandidate& c) {
    if (std::none_of(table.begin(), table.end(),
                     [&c](const PlanCandidate& t) { return SameRow(t, c); }))
      table.push_back(c);
  };
  for (const PlanCandidate& c : all) {
    if (!c.fits || (larger_fits && c.micro_batch == 1 && !SameRow(c, chosen))) continue;
    bool dominated = std::any_of(all.begin(), all.end(), [&](const PlanCandidate& o) {
      return o.fits && o.peak_bytes <= c.peak_bytes &&
             o.samples_per_second >= c.samples_per_second &&
             (o.peak_bytes < c.peak_bytes || o.samples_per_second > c.samples_per_second);
    });
    if (!dominated) add(c);
  }
  for (const PlanCandidate& c : configuration_picks)
    if (c.fits) add(c);
  const PlanCandidate* runs_out = nullptr;
  for (const PlanCandidate& c : all)
    if (!c.fits && SameConfiguration(c, chosen) && c.micro_batch > chosen.micro_batch &&
        (runs_out == nullptr || c.micro_batch < runs_out->micro_batch))
      runs_out = &c;
  if (runs_out != nullptr) add(*runs_out);
  if (!chosen.fits) add(chosen);
  std::sort(table.begin(), table.end(), [](const PlanCandidate& a, const PlanCandidate& b) {
    return a.peak_bytes != b.peak_bytes ? a.peak_bytes < b.peak_bytes
                                        : a.samples_per_second > b.samples_per_second;
  });
  return table;
}

// One planned configuration (a precision and a recompute choice).
struct Configuration {
  TrainingPlan plan;
  PlannerOptions options;
  std::vector<std::string> checkpoints;
  std::vector<std::string> modules;  // module unit: the checkpointed module paths, forward order
};

// Roofline times of every node at `bindings`, from the graph's node costs analysed once per
// search (options.node_costs) when the search shares them.
Expected<std::vector<NodeTime>> NodeTimesAt(const Graph& graph, const PlannerOptions& options,
                                            const Bindings& bindings) {
  if (!options.node_costs) return EstimateNodeTimes(graph, options.gpu, bindings, {}, options.cost);
  MEMPLAN_TRY(const NodeCosts* costs, options.node_costs->Of(graph));
  return EstimateNodeTimes(*costs, options.gpu, bindings, {}, options.cost);
}

// The graph as a chain of stages for the recompute planners, sized at micro-batch m in the
// precision's activation dtype (16-bit modes store fp16/bf16 activations: half the bytes).
// Deliberately this rough model and not the placement's per-value dtypes: measured on the zoo
// models (issue 15), sizing the chain with the placement changes plans the tests do not pin
// (gpt2_small fp16 on 8G: m 12 -> 13 at 1% fewer samples/s) and still needs the calibration
// rounds below, since the DP's error is dominated by what its stage model leaves out.
Expected<ChainDecomposition> ChainAt(const Graph& graph, const PlannerOptions& options,
                                     std::optional<SymbolId> batch, int64_t m) {
  Bindings bindings = options.bindings;
  if (batch) bindings.Bind(*batch, m);
  MEMPLAN_TRY(std::vector<NodeTime> times, NodeTimesAt(graph, options, bindings));
  const bool half = options.program.precision != Precision::kFp32;
  ChainCostFunctions costs;
  costs.value_bytes = [&graph, bindings, half](ValueId v) -> int64_t {
    const Value& value = graph.value(v);
    auto n = value.shape.NumElements().Evaluate(bindings);
    if (!n.ok()) return 0;
    int64_t bytes = ByteSize(value.dtype);
    if (half && value.dtype == DType::kFloat32) bytes = 2;
    return *n * bytes;
  };
  costs.forward_time = [times](NodeId n) { return times[n.index()].forward_seconds; };
  costs.backward_time = [times](NodeId n) { return times[n.index()].backward_seconds; };
  return DecomposeIntoChain(graph, costs);
}

// Plans the micro-batch for one recompute schedule: derives the node set from the chain
// decomposition and runs the micro-batch planner with it; nullopt when the schedule recomputes
// nothing or a node set already `tried`.
Expected<std::optional<Configuration>> PlanSelection(const Graph& graph, const PlannerOptions& base,
                                                     const ChainDecomposition& chain,
                                                     const RecomputeSchedule& schedule,
                                                     RecomputeLabel label,
                                                     std::vector<std::vector<NodeId>>& tried) {
  MEMPLAN_TRY(RecomputeSelection selection, SelectRecomputeNodes(graph, chain, schedule));
  if (selection.recompute_nodes.empty()) return std::optional<Configuration>();
  if (std::find(tried.begin(), tried.end(), selection.recompute_nodes) != tried.end())
    return std::optional<Configuration>();
  tried.push_back(selection.recompute_nodes);
  Configuration attempt;
  attempt.options = base;
  attempt.options.program.recompute = selection.recompute_nodes;
  attempt.options.recompute_label = label;
  MEMPLAN_TRY(attempt.plan, PlanTraining(graph, attempt.options));
  attempt.checkpoints = selection.checkpoint_names;
  return std::optional<Configuration>(std::move(attempt));
}

// The chain DP prices memory with its own stage model (no allocator rounding, transients or
// cross-stage views), so a schedule for `activation_budget` can land well under the real budget
// (recomputing more than needed) or just over it. The simulator is the truth: up to
// kCalibrationRounds times, move the DP's budget by the simulated slack (budget - peak) and keep
// the best plan that fits.
constexpr int kCalibrationRounds = 3;
Expected<std::optional<Configuration>> PlanOptimalCalibrated(
    const Graph& graph, const PlannerOptions& base, const ChainDecomposition& chain,
    int64_t budget_bytes, int64_t activation_budget, std::vector<std::vector<NodeId>>& tried) {
  std::optional<Configuration> best;
  for (int round = 0; round < kCalibrationRounds && activation_budget > 0; ++round) {
    Expected<RecomputeSchedule> schedule = PlanOptimalChain(chain.chain, activation_budget);
    if (!schedule.ok()) break;  // nothing fits at this budget
    MEMPLAN_TRY(std::optional<Configuration> attempt,
                PlanSelection(graph, base, chain, *schedule, RecomputeLabel::kOptimal, tried));
    if (!attempt) break;
    const int64_t slack = budget_bytes - attempt->plan.chosen.peak_bytes;
    if (!best || Better(attempt->plan, best->plan)) best = std::move(attempt);
    // Within 2% of the budget is as close as the search goes.
    if (slack >= 0 && slack < budget_bytes / 50) break;
    activation_budget += slack;
  }
  return best;
}

// ---- module unit (--recompute-unit module) ----------------------------------------------------
//
// Which modules to wrap in torch.utils.checkpoint: a greedy order plus a binary search over the
// count. The modules are ordered by estimated bytes dropped per second of forward re-run
// (ModuleCheckpointOrder: homogeneous blocks keep forward order, h.0 first), and the plan
// checkpoints a prefix of that order: the shortest prefix whose simulated peak at the target
// micro-batch fits the budget less the headroom, found by binary search (each probe derives the
// program with those modules and simulates it). Adding a module never keeps more, so the fit is
// monotone in the count up to the recompute transients, which the probes see. Exact search over
// subsets is unnecessary for repeated blocks: any c of n equal blocks save the same bytes at the
// same cost.

// Estimated bytes dropped and seconds re-run per module at micro-batch m, for the order only.
Expected<std::vector<ModuleCheckpointCost>> ModuleCostsAt(
    const Graph& graph, const PlannerOptions& options, std::optional<SymbolId> batch, int64_t m,
    const std::vector<CheckpointableModule>& modules) {
  Bindings bindings = options.bindings;
  if (batch) bindings.Bind(*batch, m);
  MEMPLAN_TRY(std::vector<NodeTime> times, NodeTimesAt(graph, options, bindings));
  const bool half = options.program.precision != Precision::kFp32;
  std::vector<ModuleCheckpointCost> costs;
  for (const CheckpointableModule& module : modules) {
    MEMPLAN_TRY(RecomputeSet set, ResolveRecomputeSet(graph, {}, {module.nodes}));
    ModuleCheckpointCost cost;
    for (NodeId n : set.nodes) {
      cost.rerun_seconds += times[n.index()].forward_seconds;
      for (ValueId o : graph.node(n).outputs) {
        const Value& value = graph.value(o);
        if (!value.shape.known) continue;
        auto elements = value.shape.NumElements().Evaluate(bindings);
        if (value.kind == ValueKind::kConstant || !elements.ok()) continue;
        const int64_t bytes = half && value.dtype == DType::kFloat32 ? 2 : ByteSize(value.dtype);
        cost.dropped_bytes += static_cast<double>(*elements * bytes);
      }
    }
    costs.push_back(cost);
  }
  return costs;
}

// `base` with the modules `chosen` (indices into `modules`) checkpointed and nothing else.
PlannerOptions WithModules(const PlannerOptions& base,
                           const std::vector<CheckpointableModule>& modules,
                           const std::vector<size_t>& chosen) {
  PlannerOptions options = base;
  options.program.recompute.clear();
  options.program.recompute_modules.clear();
  for (size_t i : chosen) options.program.recompute_modules.push_back(modules[i].nodes);
  return options;
}

// The simulated peak with the first `count` modules of `order` checkpointed at micro-batch m, and
// the limit it must stay under: the budget less the headroom, as the micro-batch search
// recommends (a fixed --micro-batch: the budget, as PlanTraining judges it).
struct PrefixPeak {
  int64_t peak_bytes = 0;
  int64_t limit_bytes = 0;
  bool fits() const { return peak_bytes <= limit_bytes; }
};

// One derived program per checkpointed module set (sorted indices into the modules), kept while
// one recompute kind searches its targets: the targets' searches probe many of the same sets at
// other micro-batches, and a probe at a new m is one simulation, not a derivation.
using ModuleProbes = std::map<std::vector<size_t>, std::unique_ptr<FitProbe>>;

Expected<PrefixPeak> ModulePrefixPeak(const Graph& graph, const PlannerOptions& base,
                                      const std::vector<CheckpointableModule>& modules,
                                      const std::vector<size_t>& order, size_t count, int64_t m,
                                      ModuleProbes& probes) {
  std::vector<size_t> chosen(order.begin(), order.begin() + static_cast<long>(count));
  std::sort(chosen.begin(), chosen.end());
  std::unique_ptr<FitProbe>& probe = probes[chosen];
  if (!probe) {
    MEMPLAN_TRY(probe, FitProbe::Derive(graph, WithModules(base, modules, chosen)));
  }
  MEMPLAN_TRY(FixedMicroBatchFit fit, probe->At(m));
  PrefixPeak result;
  result.peak_bytes = fit.peak_bytes;
  result.limit_bytes = base.micro_batch ? fit.budget_bytes : fit.budget_bytes - fit.headroom_bytes;
  return result;
}

// The shortest prefix of `order` (count in [1, n]) that fits m, given that all n fit (`all`).
// Each probe simulates a program (and derives it, the first time its module set is probed), so
// the search places its probes where the peak says the answer is: the peak falls about linearly
// with the count (repeated blocks drop equal bytes), so once the bracket has a probe that does not
// fit, the next probe goes where the line through the bracket's two measured peaks crosses the
// limit. The bracket [lo, hi] always holds the shortest fitting count (counts below lo do not fit,
// hi fits), so for a fit monotone in the count, which the search assumes, it finds the count
// bisection finds, in about 4 probes instead of log2(n) + 1 (7 for GPT-2 XL's 48 blocks).
Expected<size_t> ShortestFittingPrefix(const Graph& graph, const PlannerOptions& base,
                                       const std::vector<CheckpointableModule>& modules,
                                       const std::vector<size_t>& order, int64_t m,
                                       const PrefixPeak& all, ModuleProbes& probes) {
  size_t lo = 1;
  size_t hi = order.size();
  int64_t hi_peak = all.peak_bytes;
  std::optional<int64_t> below_peak;  // the peak at lo - 1, once a probe did not fit
  while (lo < hi) {
    size_t count = lo + (hi - lo) / 2;
    if (below_peak && *below_peak > hi_peak) {
      // The line through (lo - 1, below_peak) and (hi, hi_peak) reaches the limit at lo - 1 + t.
      const double drop_per_module =
          static_cast<double>(*below_peak - hi_peak) / static_cast<double>(hi - (lo - 1));
      const double t =
          std::ceil(static_cast<double>(*below_peak - all.limit_bytes) / drop_per_module);
      count = std::clamp<size_t>(lo - 1 + static_cast<size_t>(std::max(t, 1.0)), lo, hi - 1);
    }
    MEMPLAN_TRY(PrefixPeak at, ModulePrefixPeak(graph, base, modules, order, count, m, probes));
    if (at.fits()) {
      hi = count;
      hi_peak = at.peak_bytes;
    } else {
      lo = count + 1;
      below_peak = at.peak_bytes;
    }
  }
  return hi;
}

// Plans the micro-batch with the modules `chosen` checkpointed; nullopt when `chosen` is empty or
// was already planned (`tried` holds the node lists of the module sets planned). A set the search
// probed is planned on its probe's program (FitProbe::Plan: the plan PlanTraining makes, without
// deriving the program again).
Expected<std::optional<Configuration>> PlanModuleSelection(
    const Graph& graph, const PlannerOptions& base,
    const std::vector<CheckpointableModule>& modules, std::vector<size_t> chosen,
    RecomputeLabel label, std::vector<std::vector<NodeId>>& tried, ModuleProbes& probes) {
  if (chosen.empty()) return std::optional<Configuration>();
  std::sort(chosen.begin(), chosen.end());
  std::vector<NodeId> key;
  for (size_t i : chosen) key.insert(key.end(), modules[i].nodes.begin(), modules[i].nodes.end());
  if (std::find(tried.begin(), tried.end(), key) != tried.end())
    return std::optional<Configuration>();
  tried.push_back(std::move(key));
  Configuration attempt;
  attempt.options = WithModules(base, modules, chosen);
  attempt.options.recompute_label = label;
  if (auto probed = probes.find(chosen); probed != probes.end()) {
    MEMPLAN_TRY(attempt.plan, probed->second->Plan(label));
  } else {
    MEMPLAN_TRY(attempt.plan, PlanTraining(graph, attempt.options));
  }
  for (size_t i : chosen) attempt.modules.push_back(modules[i].path);
  return std::optional<Configuration>(std::move(attempt));
}

// One module recompute plan of `kind` for target micro-batch m_target: all = every module (what
// HF's gradient_checkpointing runs); optimal = the shortest prefix of the greedy order that fits.
Expected<std::optional<Configuration>> PlanModuleRecompute(
    const Graph& graph, const PlannerOptions& base, RecomputeChoice kind,
    const TrainingPlan& without, int64_t m_target, const std::vector<CheckpointableModule>& modules,
    std::vector<std::vector<NodeId>>& tried, ModuleProbes& probes) {
  std::vector<size_t> chosen;
  if (kind == RecomputeChoice::kAll) {
    for (size_t i = 0; i < modules.size(); ++i) chosen.push_back(i);
    return PlanModuleSelection(graph, base, modules, chosen, RecomputeLabel::kAll, tried, probes);
  }
  MEMPLAN_TRY(std::vector<ModuleCheckpointCost> costs,
              ModuleCostsAt(graph, base, without.program.batch_symbol, m_target, modules));
  const std::vector<size_t> order = ModuleCheckpointOrder(costs);
  if (order.empty()) return std::optional<Configuration>();
  // When even every module does not fit m_target, the plan with all of them is still the one
  // with the largest micro-batch; Better() compares it with the other targets.
  size_t hi = order.size();
  MEMPLAN_TRY(PrefixPeak all, ModulePrefixPeak(graph, base, modules, order, hi, m_target, probes));
  if (all.fits()) {
    MEMPLAN_TRY(hi, ShortestFittingPrefix(graph, base, modules, order, m_target, all, probes));
  }
  chosen.assign(order.begin(), order.begin() + static_cast<long>(hi));
  return PlanModuleSelection(graph, base, modules, chosen, RecomputeLabel::kOptimal, tried, probes);
}

// `tried` holds the recompute node sets already planned for this precision and kind: two targets
// whose schedules select the same nodes give the same program and the same plan, so the second is
// skipped (the first stays the better of equals).
// `modules`: the module unit's candidates, null for the node unit.
Expected<std::optional<Configuration>> PlanWithRecompute(
    const Graph& graph, const PlannerOptions& base, RecomputeChoice kind,
    const TrainingPlan& without, int64_t m_target, std::vector<std::vector<NodeId>>& tried,
    const std::vector<CheckpointableModule>* modules, ModuleProbes& probes) {
  if (modules != nullptr)
    return PlanModuleRecompute(graph, base, kind, without, m_target, *modules, tried, probes);
  std::optional<SymbolId> batch = without.program.batch_symbol;
  MEMPLAN_TRY(ChainDecomposition chain, ChainAt(graph, base, batch, m_target));
  if (chain.chain.num_stages() < 2) return std::optional<Configuration>();
  Expected<RecomputeSchedule> schedule = MakeError("unset");
  RecomputeLabel label = RecomputeLabel::kNone;
  switch (kind) {
    case RecomputeChoice::kAll:
      schedule = PlanRecomputeAll(chain.chain);
      label = RecomputeLabel::kAll;
      break;
    case RecomputeChoice::kSqrt:
      schedule = PlanSqrtCheckpoints(chain.chain);
      label = RecomputeLabel::kSqrt;
      break;
    default: {
      // What activations may use at m_target: the budget minus everything that does not scale
      // with the recompute choice (parameters, gradients, optimizer state, inputs), read off the
      // no-recompute simulation.
      const CategoryBytes& at_peak = without.simulation.peak_breakdown;
      int64_t fixed = at_peak[MemoryCategory::kParameters] +
                      at_peak[MemoryCategory::kOptimizerState] +
                      at_peak[MemoryCategory::kGradients];
      // The recompute schedule aims under the headroom, as the micro-batch search does.
      const int64_t target_bytes = without.budget_bytes - without.headroom_bytes;
      int64_t activation_budget = target_bytes - fixed;
      if (activation_budget <= 0) return std::optional<Configuration>();
      return PlanOptimalCalibrated(graph, base, chain, target_bytes, activation_budget, tried);
    }
  }
  if (!schedule.ok()) return std::optional<Configuration>();  // nothing fits at m_target
  return PlanSelection(graph, base, chain, *schedule, label, tried);
}

// The placement of one precision. Every precision checks the override lists (an entry naming
// nothing is an error even in fp32, where nothing is placed).
Expected<PrecisionPlacement> PlaceFor(const Graph& graph, const PlannerOptions& base,
                                      const SearchOptions& search, Precision precision) {
  PrecisionOptions placement_options;
  placement_options.mode = precision;
  placement_options.force_fp32 = search.force_fp32;
  placement_options.force_fp16 = search.force_fp16;
  placement_options.amp_mode = base.program.amp_mode;
  placement_options.loss_scaling = base.program.loss_scaling;
  placement_options.registry = base.program.registry;
  return PlacePrecision(graph, placement_options);
}

// The recompute kinds to try given the plan without recompute. auto: recompute only when the
// budget needs it: nothing fits, or the global batch needs accumulation that a larger
// micro-batch could save.
std::vector<RecomputeChoice> RecomputeKindsToTry(RecomputeChoice asked,
                                                 const TrainingPlan& without) {
  const bool needs_recompute = !without.feasible || (without.global_batch_requested &&
                                                     without.chosen.accumulation_steps > 1);
  switch (asked) {
    case RecomputeChoice::kNone:
      return {};
    case RecomputeChoice::kAuto:
      if (needs_recompute) return {RecomputeChoice::kOptimal};
      return {};
    default:
      return {asked};
  }
}

// Target micro-batches for one recompute kind: larger than what fits without recompute, up to
// the global batch.
std::vector<int64_t> RecomputeTargets(const PlannerOptions& base, RecomputeChoice kind,
                                      const TrainingPlan& without) {
  const int64_t m0 = std::max<int64_t>(1, without.largest_within_headroom);
  std::vector<int64_t> targets;
  if (base.micro_batch) {
    // A fixed micro-batch is the only target: the DP then spends exactly what that m needs
    // (nothing when it already fits).
    targets.push_back(*base.micro_batch);
  } else if (kind == RecomputeChoice::kOptimal) {
    for (int64_t factor : {2, 4, 8}) targets.push_back(m0 * factor);
    // The micro-batch target is per data-parallel rank.
    if (without.global_batch_requested)
      targets.push_back(without.requested_global_batch / without.program.data_parallel_ranks);
  } else {
    targets.push_back(m0);
  }
  return targets;
}

// The best recompute plan of one kind over its targets, or nullopt when none was made.
Expected<std::optional<Configuration>> BestRecomputeAttempt(
    const Graph& graph, const PlannerOptions& options, RecomputeChoice kind,
    const TrainingPlan& without, const std::vector<CheckpointableModule>* modules) {
  std::optional<Configuration> best;
  std::vector<std::vector<NodeId>> tried;
  ModuleProbes probes;
  for (int64_t target : RecomputeTargets(options, kind, without)) {
    // `optimal` minimises added time under the budget: where the micro-batch fits without
    // recompute, that is no recompute at all.
    // (A fixed micro-batch reports itself as largest_fitting_micro_batch; `feasible` says.)
    const bool fits_without =
        options.micro_batch ? without.feasible : target <= without.largest_within_headroom;
    if (kind == RecomputeChoice::kOptimal && fits_without) continue;
    MEMPLAN_TRY(std::optional<Configuration> attempt,
                PlanWithRecompute(graph, options, kind, without, target, tried, modules, probes));
    if (!attempt) continue;
    if (!best || Better(attempt->plan, best->plan)) best = std::move(attempt);
  }
  return best;
}

// Plans one precision: without recompute, then each recompute kind to try; appends the
// configurations kept.
Status PlanPrecision(const Graph& graph, const PlannerOptions& base, const SearchOptions& search,
                     Precision precision, const std::vector<CheckpointableModule>* modules,
                     std::vector<Configuration>& configurations) {
  PlannerOptions options = base;
  options.program.precision = precision;
  options.recompute_label = RecomputeLabel::kNone;
  MEMPLAN_TRY(PrecisionPlacement placement, PlaceFor(graph, base, search, precision));
  // Mixed precisions run the placement in their program.
  std::optional<PrecisionPlacement> placed;
  if (precision != Precision::kFp32) {
    ApplyPlacement(placement, options.program);
    placed = std::move(placement);
  }
  MEMPLAN_TRY(TrainingPlan without, PlanTraining(graph, options));

  const bool forced =
      search.recompute != RecomputeChoice::kNone && search.recompute != RecomputeChoice::kAuto;
  const size_t before = configurations.size();
  for (RecomputeChoice kind : RecomputeKindsToTry(search.recompute, without)) {
    MEMPLAN_TRY(std::optional<Configuration> attempt,
                BestRecomputeAttempt(graph, options, kind, without, modules));
    if (!attempt) continue;
    attempt->plan.placement = placed;
    configurations.push_back(std::move(*attempt));
  }
  // Without recompute stays a candidate unless the user forced a recompute kind that worked.
  if (!forced || configurations.size() == before) {
    without.placement = std::move(placed);
    configurations.push_back({std::move(without), options, {}, {}});
  }
  return OkStatus();
}

ConfigurationOutcome OutcomeOf(const Configuration& c) {
  ConfigurationOutcome outcome;
  outcome.chosen = c.plan.chosen;
  outcome.feasible = c.plan.feasible;
  outcome.largest_fitting_micro_batch = c.plan.largest_fitting_micro_batch;
  outcome.largest_within_headroom = c.plan.largest_within_headroom;
  outcome.knee = c.plan.knee;
  outcome.knee_best_micro_batch = c.plan.knee_best_micro_batch;
  outcome.knee_best_samples_per_second = c.plan.knee_best_samples_per_second;
  outcome.recomputed_nodes = c.plan.program.recomputed.size();
  outcome.checkpointed_modules = c.modules.size();
  return outcome;
}

}  // namespace

Expected<JointPlan> PlanJointly(const Graph& graph, const PlannerOptions& base,
                                const SearchOptions& search) {
  // The recompute unit: module wherever the node names say which modules a script can wrap.
  const std::vector<CheckpointableModule> modules = FindCheckpointableModules(graph);
  RecomputeUnit unit = search.recompute_unit;
  if (unit == RecomputeUnit::kAuto)
    unit = !modules.empty() && search.recompute != RecomputeChoice::kSqrt ? RecomputeUnit::kModule
                                                                          : RecomputeUnit::kNode;
  if (unit == RecomputeUnit::kModule && search.recompute == RecomputeChoice::kSqrt)
    return MakeError(
        "recompute sqrt places node-level segments, which have no module form; with "
        "the module unit use all, optimal or auto");
  if (unit == RecomputeUnit::kModule && modules.empty() &&
      search.recompute != RecomputeChoice::kNone)
    return MakeError(
        "the module recompute unit needs node names with module scopes, such as "
        "/h.0/attn/MatMul from torch.onnx.export; no node of this model has an "
        "indexed module scope, so use the node unit");
  const std::vector<CheckpointableModule>* module_units =
      unit == RecomputeUnit::kModule ? &modules : nullptr;

  // Every precision and recompute attempt plans this graph: its node costs are analysed once.
  PlannerOptions shared = base;
  if (!shared.node_costs) shared.node_costs = std::make_shared<NodeCostsCache>();
  // and each micro-batch's shapes re-checked once for all of them.
  if (!shared.micro_batch_shapes && !base.tensor_parallel.enabled())
    shared.micro_batch_shapes = std::make_shared<MicroBatchShapeCheck>(graph, base.bindings);
  std::vector<Configuration> configurations;
  for (Precision precision : PrecisionsToTry(search.precision, base.gpu, base.program.amp_mode))
    MEMPLAN_RETURN_IF_ERROR(
        PlanPrecision(graph, shared, search, precision, module_units, configurations));

  size_t best = 0;
  for (size_t i = 1; i < configurations.size(); ++i)
    if (Better(configurations[i].plan, configurations[best].plan)) best = i;

  JointPlan result;
  result.trace.chosen = best;
  result.trace.fixed_micro_batch = base.micro_batch;
  result.trace.global_batch = base.global_batch;
  result.trace.recompute = search.recompute;
  result.trace.recompute_unit = unit;
  std::vector<PlanCandidate> all;
  std::vector<PlanCandidate> picks;
  for (const Configuration& c : configurations) {
    result.trace.configurations.push_back(OutcomeOf(c));
    all.insert(all.end(), c.plan.candidates.begin(), c.plan.candidates.end());
    picks.push_back(c.plan.chosen);
  }
  Configuration& chosen = configurations[best];
  result.plan = std::move(chosen.plan);
  result.options_used = std::move(chosen.options);
  result.options_used.node_costs.reset();  // the search's caches: not settings the user chose
  result.options_used.micro_batch_shapes.reset();
  result.options_used.derivations.reset();
  result.checkpoint_nodes = std::move(chosen.checkpoints);
  result.plan.recompute_unit = unit;
  result.plan.checkpoint_modules = std::move(chosen.modules);
  result.plan.checkpointable_modules = modules.size();
  if (configurations.size() > 1)
    result.plan.candidates = CandidatesTable(all, picks, result.plan.chosen);
  return result;
}

}  // namespace memplan
