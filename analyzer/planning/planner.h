#pragma once
// The planner: which micro-batch m and accumulation steps k (k = G / m for a global batch G) fit
// the GPU, and which is fastest. It derives the training program once per configuration (precision
// and recompute choice), then asks the simulator for the peak of many micro-batch sizes (sizes
// are symbolic in the batch symbol, so no re-derivation) and the roofline cost model for time.
//
// Usage:
//   PlannerOptions options;
//   MEMPLAN_TRY(options.gpu, ResolveGpu("24G"));
//   options.bindings = bindings;  // --dim values; the batch symbol is bound per candidate
//   MEMPLAN_TRY(TrainingPlan plan, PlanTraining(graph, options));
//   if (!plan.feasible) ...  // plan.infeasible says what would fit

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "analyzer/cost/collective_cost.h"
#include "analyzer/cost/cost_model.h"
#include "analyzer/cost/gpu_specs.h"
#include "analyzer/cost/offload_cost.h"
#include "analyzer/derivation/program_derivation.h"
#include "analyzer/parallel/tensor_parallel.h"
#include "analyzer/precision/precision_placement.h"
#include "analyzer/program/training_program.h"
#include "analyzer/simulation/allocator_config.h"
#include "analyzer/simulation/simulator.h"
#include "analyzer/vocabulary/name_table.h"
#include "analyzer/vocabulary/recompute_choice.h"
#include "analyzer/vocabulary/recompute_unit.h"
#include "graph/expected.h"
#include "graph/graph.h"
#include "graph/symbols.h"

namespace memplan {

#define MEMPLAN_ALLOCATOR_KINDS(X)                                                  \
  /* PyTorch's CUDA caching allocator: what really has to fit (reserved bytes) */   \
  X(kCaching, "caching")                                                            \
  X(kExact, "exact") /* live bytes only: the lower bound */                         \
  /* The caching allocator with PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True */ \
  /* (analyzer/simulation/expandable_allocator.h): reserved bytes as well. */       \
  X(kExpandable, "expandable")
MEMPLAN_NAMED_ENUM(AllocatorKind, MEMPLAN_ALLOCATOR_KINDS);
// "caching" | "exact" | "expandable"
Expected<AllocatorKind> ParseAllocatorKind(std::string_view text);
// Whether a plan under `kind` must fit its reserved bytes (a device allocator model) rather than
// its live bytes (the exact lower bound).
inline bool FitsReservedBytes(AllocatorKind kind) { return kind != AllocatorKind::kExact; }

// The largest global batch or micro-batch the planner takes: m * ceil(G / m) < G + m, so with both
// at most 2^62 every product it forms fits int64.
inline constexpr int64_t kMaxPlannedBatch = int64_t{1} << 62;

// Memory the recommended micro-batch leaves unused below the budget, so a plan does not sit at
// the edge of an out-of-memory error (fragmentation drift, a longer batch, another process):
// `fraction` of the budget plus `bytes`. The CLI's default is 5% (--headroom); the library's is
// none, the rule its tests were derived with.
struct Headroom {
  double fraction = 0;  // of the budget, in [0, kMaxHeadroomFraction]
  int64_t bytes = 0;    // >= 0

  // REQUIRES: budget >= 0.
  int64_t BytesOf(int64_t budget) const;
};
// More than half the budget kept free is a mistake, not a margin (--headroom 60% is refused).
inline constexpr double kMaxHeadroomFraction = 0.5;
// The CLI's default headroom (--headroom): 5% of the budget.
inline constexpr double kDefaultCliHeadroomFraction = 0.05;
// The CLI's default throughput knee (--knee): the recommended micro-batch is the smallest power of
// two whose estimated samples/s is within 2% of the best the fitting micro-batches reach. Past it,
// doubling m buys under 2% more samples/s for twice the activation memory and a learning rate
// retuned for the larger batch.
inline constexpr double kDefaultCliKneeTolerance = 0.02;
// "2%" -> 0.02, "0" / "0%" -> 0 (the largest that fits). Errors: a negative or malformed value, or
// 50% and more.
Expected<double> ParseKneeTolerance(std::string_view text);
// "5%" -> 5% of the budget, "0" -> none, "1G" / "512MiB" -> bytes (memory_size.h). Errors (the
// message names no flag): a negative or malformed value, a percentage over 50%.
Expected<Headroom> ParseHeadroom(std::string_view text);

// The op registry's symbolic costs of one graph's nodes (AnalyzeNodeCosts), analysed on first
// use. They depend on the graph alone, and the joint search plans one graph once per precision
// and recompute attempt: on a 50,000-node chain the analysis was 4% of `analyze`, done twice.
// graph/bound_shape_check.h: the graph's shapes re-checked at each micro-batch the search tries.
class MicroBatchShapeCheck;
// analyzer/planning/derivation_cache.h: programs derived once for every plan that asks for them.
class DerivationCache;

class NodeCostsCache {
 public:
  // REQUIRES: the same graph on every call.
  Expected<const NodeCosts*> Of(const Graph& graph);

 private:
  const Graph* graph_ = nullptr;
  std::optional<NodeCosts> costs_;
};

struct PlannerOptions {
  GpuSpec gpu;
  // Headroom the plan must leave free (--reserve), on top of the GPU's context overhead.
  int64_t reserve_bytes = 0;
  // The recommended micro-batch is the largest whose peak stays under budget - headroom; the
  // largest under the budget itself is reported beside it (TrainingPlan::largest_fitting_...).
  Headroom headroom;
  // Without a global batch or a fixed micro-batch: > 0 recommends the throughput knee, the
  // smallest power of two m (or the largest under the headroom) whose estimated samples/s is at
  // least (1 - knee_tolerance) x the best among those m; 0 recommends the largest under the
  // headroom. The largest stays in TrainingPlan::largest_within_headroom either way.
  double knee_tolerance = 0;
  // Target global batch G (--global-batch); nullopt = the recommended m (knee or largest), without
  // accumulation (k = 1), reported as such.
  std::optional<int64_t> global_batch;
  // Fixes m (--micro-batch / --batch) for what-if questions: no search.
  std::optional<int64_t> micro_batch;
  // Precision, optimizer, loss, zero_grad, clipping, recompute for the program. Its
  // accumulation_steps is ignored: the planner derives k.
  ProgramOptions program;
  AllocatorKind allocator = AllocatorKind::kCaching;
  // --alloc-conf: the PYTORCH_CUDA_ALLOC_CONF the run sets (issue 41 item 5). Its caching options
  // (max_split_size_mb, roundup_power2_divisions) shape the caching model; expandable_segments
  // is `allocator` = kExpandable (the CLI resolves it). Default: PyTorch's defaults.
  AllocatorConfig alloc_config;
  CostModelOptions cost;
  // Data parallel (program.data_parallel set): the links collectives run over. A link with no
  // bandwidth is the default for the GPU (ResolvedCollectiveOptions); nodes come from
  // program.data_parallel.
  CollectiveCostOptions collectives;
  // --tp: the split applied to the graph (analyzer/parallel/tensor_parallel.h). The graph is
  // already one tensor-parallel rank's; the planner adds the group's all-reduces to the step time.
  TensorParallelPlan tensor_parallel;
  // --offload (program.offload): the host link the copies cross and the CPU optimizer's memory
  // bandwidth. A link with no bandwidth is the GPU's (ResolvedOffloadCostOptions).
  OffloadCostOptions offload_cost;
  // Bindings of the non-batch symbols (--dim seq=512); the batch symbol is bound per candidate.
  Bindings bindings;
  // The search stops growing m here; a model this small per sample is limited by the data, not
  // by memory, and the report says "at least".
  int64_t max_micro_batch = 65536;
  // When the largest divisor of G that fits is smaller than this fraction of the largest m that
  // fits, the planner takes the larger m and an effective batch slightly above G (and says so)
  // rather than lose more than half of the per-kernel efficiency to a tiny m.
  double min_divisor_fraction = 0.5;
  // Rows in the candidates table.
  int max_candidates = 8;
  // How the program's recompute set (program.recompute) was chosen, for reports. nullopt = kNone
  // without recompute, kCustom with.
  std::optional<RecomputeLabel> recompute_label;
  // The graph's node costs, shared by every PlanTraining call given this cache (copies of these
  // options share it); null: each call analyses them itself.
  std::shared_ptr<NodeCostsCache> node_costs;
  // Re-checks the graph's shapes at every micro-batch the search tries, the chosen and the
  // candidates table's included (graph/bound_shape_check.h): a micro-batch at which a Reshape or
  // an Expand no longer holds is an error naming the node and the micro-batch, never a plan.
  // Shared like node_costs; null: PlanTraining checks `graph` itself unless it is a --tp slice
  // (whose check the caller made before the split: MicroBatchShapeCheck::Snapshot).
  std::shared_ptr<MicroBatchShapeCheck> micro_batch_shapes;
  // The programs derived for earlier plans of this graph (or of others the cache has seen),
  // shared like node_costs; null: each PlanTraining call derives its program itself.
  std::shared_ptr<DerivationCache> derivations;
};

// `options.collectives` with the defaults filled in: the GPU's intra-node link, the default
// inter-node link, the node count of program.data_parallel.
CollectiveCostOptions ResolvedCollectiveOptions(const PlannerOptions& options);
// `options.offload_cost` with the GPU's host link (DefaultHostLink) when none is given.
OffloadCostOptions ResolvedOffloadCostOptions(const PlannerOptions& options);

// One (m, k) evaluated: simulated peak and estimated time.
struct PlanCandidate {
  int64_t micro_batch = 0;
  int64_t accumulation_steps = 1;
  int64_t global_batch = 0;  // m * k * data-parallel ranks
  Precision precision = Precision::kFp32;
  RecomputeLabel recompute = RecomputeLabel::kNone;
  int64_t peak_bytes = 0;        // under the planner's allocator model (caching: reserved)
  int64_t exact_peak_bytes = 0;  // live bytes (lower bound)
  bool fits = false;
  double step_seconds = 0;
  double samples_per_second = 0;
};

// Why nothing fits, and what would.
struct InfeasibleReport {
  int64_t required_bytes = 0;        // peak at m = 1 + context + reserve
  std::string smallest_fitting_gpu;  // from the GPU table; empty when none is large enough
  MemoryCategory dominant = MemoryCategory::kParameters;  // largest category at that peak
  int64_t dominant_bytes = 0;
};

struct TrainingPlan {
  bool feasible = false;
  PlanCandidate chosen;
  int64_t budget_bytes = 0;                 // gpu memory - context - reserve
  bool global_batch_requested = false;      // G came from --global-batch
  bool micro_batch_fixed = false;           // m came from --micro-batch (no search)
  bool global_batch_exact = true;           // m * k * ranks == requested G
  int64_t requested_global_batch = 0;       // G as asked, over all data-parallel ranks
  bool micro_batch_capped = false;          // the search stopped at max_micro_batch
  int64_t largest_fitting_micro_batch = 0;  // under the budget: the absolute maximum
  // The headroom in bytes, and the largest micro-batch under budget - headroom (what the search
  // recommends; equals largest_fitting_micro_batch without headroom). At least 1 when anything
  // fits: a plan whose m = 1 fits only inside the headroom still recommends 1, and says so.
  int64_t headroom_bytes = 0;
  int64_t largest_within_headroom = 0;
  // The peak at largest_fitting_micro_batch (how close to the edge the maximum is); 0 when
  // nothing fits or the micro-batch was fixed.
  int64_t largest_fitting_peak_bytes = 0;
  // The throughput knee (PlannerOptions::knee_tolerance): set when the chosen m is the knee,
  // below largest_within_headroom. The m among those compared with the best samples/s, and
  // that rate; the chosen one's is chosen.samples_per_second.
  bool knee = false;
  int64_t knee_best_micro_batch = 0;
  double knee_best_samples_per_second = 0;

  TrainingProgram program;      // of the chosen configuration (k set to the chosen k)
  SimulationResult simulation;  // chosen plan under the planner's allocator, with timeline
  StepTimeEstimate time;
  Bindings bindings;                      // everything bound, the batch symbol = chosen m
  std::vector<PlanCandidate> candidates;  // sorted by micro-batch, the chosen one included
  std::optional<InfeasibleReport> infeasible;
  // Mixed precision: the per-node dtype placement the program runs and why (the joint search
  // fills it, analyzer/precision/precision_placement.h); nullopt in fp32 or when the caller set
  // ProgramOptions::node_dtype itself.
  std::optional<PrecisionPlacement> placement;
  // The granularity the recompute set was chosen at (the joint search sets it; never kAuto):
  // kModule plans checkpoint whole modules, named in checkpoint_modules (forward order), out of
  // the checkpointable_modules repeated blocks the model has (analyzer/recompute/module_units.h).
  RecomputeUnit recompute_unit = RecomputeUnit::kNode;
  std::vector<std::string> checkpoint_modules;
  size_t checkpointable_modules = 0;
};

// Errors (exit 2): an unbound non-batch symbol, a budget that is not positive (reserve larger than
// the GPU), a fixed micro-batch or global batch < 1, derivation errors.
Expected<TrainingPlan> PlanTraining(const Graph& graph, const PlannerOptions& options);

}  // namespace memplan
