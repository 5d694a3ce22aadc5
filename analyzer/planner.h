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
#include <optional>
#include <string>
#include <vector>

#include "analyzer/cost_model.h"
#include "analyzer/gpu_specs.h"
#include "analyzer/precision/precision_placement.h"
#include "analyzer/program_derivation.h"
#include "analyzer/simulator.h"
#include "analyzer/training_program.h"
#include "analyzer/vocabulary/recompute_choice.h"
#include "graph/expected.h"
#include "graph/graph.h"
#include "graph/symbols.h"

namespace memplan {

enum class AllocatorKind : uint8_t {
  kCaching,  // PyTorch's CUDA caching allocator: what really has to fit (reserved bytes)
  kExact,    // live bytes only: the lower bound
};
std::string_view AllocatorKindName(AllocatorKind kind);
Expected<AllocatorKind> ParseAllocatorKind(std::string_view text);  // "caching" | "exact"

struct PlannerOptions {
  GpuSpec gpu;
  // Headroom the plan must leave free (--reserve), on top of the GPU's context overhead.
  int64_t reserve_bytes = 0;
  // Target global batch G (--global-batch); nullopt = the largest m that fits, without
  // accumulation (k = 1), reported as such.
  std::optional<int64_t> global_batch;
  // Fixes m (--micro-batch / --batch) for what-if questions: no search.
  std::optional<int64_t> micro_batch;
  // Precision, optimizer, loss, zero_grad, clipping, recompute for the program. Its
  // accumulation_steps is ignored: the planner derives k.
  ProgramOptions program;
  AllocatorKind allocator = AllocatorKind::kCaching;
  CostModelOptions cost;
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
};

// One (m, k) evaluated: simulated peak and estimated time.
struct PlanCandidate {
  int64_t micro_batch = 0;
  int64_t accumulation_steps = 1;
  int64_t global_batch = 0;  // m * k
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
  int64_t budget_bytes = 0;             // gpu memory - context - reserve
  bool global_batch_requested = false;  // G came from --global-batch
  bool micro_batch_fixed = false;       // m came from --micro-batch (no search)
  bool global_batch_exact = true;       // m * k == requested G
  int64_t requested_global_batch = 0;
  bool micro_batch_capped = false;  // the search stopped at max_micro_batch
  int64_t largest_fitting_micro_batch = 0;

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
};

// Errors (exit 2): an unbound non-batch symbol, a budget that is not positive (reserve larger than
// the GPU), a fixed micro-batch or global batch < 1, derivation errors.
Expected<TrainingPlan> PlanTraining(const Graph& graph, const PlannerOptions& options);

}  // namespace memplan
