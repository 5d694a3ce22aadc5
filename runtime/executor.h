#pragma once
// The executor: a concrete interpreter of a TrainingProgram (analyzer/program/training_program.h)
// on a Backend. It is the runtime's plug-in of the ProgramWalker
// (analyzer/program/program_walker.h), the same walk the simulator takes: the walker owns the step
// order, each step's Begin events (allocations, guarded), the checks and the peak rule; the
// executor allocates device storage at each Alloc, runs the step's kernel, and drops storage at
// each Free. It derives nothing itself: what is allocated and freed when, what a backward step
// reads, where gradients go, whose storage a gradient takes over, all come from the program. The
// pieces: runtime/program_buffers.h (storage and the values buffers hold),
// runtime/constant_values.h (graph constants), runtime/compute_steps.h (kernel steps),
// runtime/optimizer_phase.h (optimizer phase, loss scale).
//
// Memory. Program buffers are allocated from the backend's counting allocator at the Alloc event
// and released at the Free event (the executor drops its only handle), so the backend's live
// bytes follow the program; the walker samples them after every Begin, the moment it takes the
// simulator's peak, and applies the same peak rule. For the CPU backend the measured peak equals
// the simulator's exact prediction byte for byte. The walker also feeds the same allocations to
// the caching-allocator model (analyzer/simulation/caching_allocator.h) so reserved bytes can be
// reported like the simulator's, and can record the event trace the simulator records.
//
// Numerics. Each micro-batch's loss gradient is scaled by loss_scale / k; parameter gradients
// accumulate per the program's guarded kAccumulateGradient (first contribution stolen, later ones
// added). The optimizer phase unscales and checks for overflow (fp16; a step with inf/NaN is
// skipped and the dynamic scale backs off), clips, updates the masters and refreshes the working
// copies, then zeroes or frees the gradients.
//
// Usage:
//   CpuBackend backend;
//   MEMPLAN_TRY(auto executor, Executor::Create(graph, program, bindings, backend, {}));
//   MEMPLAN_TRY(SyntheticData data, SyntheticData::Create(graph, program, bindings, seed));
//   std::vector<MicroBatch> batches = ...;  // k of them
//   MEMPLAN_TRY(StepRecord step, executor->RunOptimizerStep(batches));

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "analyzer/program/program_walker.h"
#include "analyzer/program/training_program.h"
#include "analyzer/simulation/simulator.h"
#include "graph/expected.h"
#include "graph/graph.h"
#include "graph/symbols.h"
#include "runtime/backend.h"
#include "runtime/loss_scaler.h"
#include "runtime/micro_batch.h"
#include "runtime/rank_group.h"

namespace memplan {

struct ExecutorOptions {
  // Seed of the parameter initialisation and of Dropout masks (one per node and micro-batch, so
  // a recompute reproduces its forward's mask).
  uint64_t seed = 0;
  // Micro-batches per optimizer step; 0 = the program's accumulation_steps.
  int64_t accumulation_steps = 0;
  // Hyper-parameters; `kind` is overwritten with the program's optimizer.
  OptimizerHyperparameters optimizer;
  // Global-norm clipping threshold (torch.nn.utils.clip_grad_norm_'s max_norm), used when the
  // program has a kClipGradients step.
  double clip_max_norm = 1.0;
  // Dynamic loss scaling (fp16); init_scale is taken from the program's loss_scaling.scale
  // unless `initial_loss_scale` overrides it (static scaling uses the override as its scale).
  LossScalerOptions loss_scaler;
  std::optional<float> initial_loss_scale;
  // Runs Dropout as the identity. Accumulation checks need it: masks depend on the batch shape,
  // so k micro-batches of m and one batch of k*m would drop different elements.
  bool disable_dropout = false;
  // Record the walker's event trace (every executed Alloc/Free), see Executor::trace().
  bool record_trace = false;
  // A per-rank program (--gpus) runs as rank `rank` of a simulated group that meets at its
  // kCollective steps (runtime/rank_group.h, runtime/collective_steps.h); its parameters start as
  // this rank's parts of the same initial values a single-GPU run has. Null: the executor runs
  // single-GPU programs only. REQUIRES: the group outlives the executor.
  RankGroup* rank_group = nullptr;
  int64_t rank = 0;
  // Called at every kOptimizerStep with the gradients it reads, after any reduction among ranks,
  // unscaling and clipping (Gradients()'s layout). Unset: nothing is copied.
  std::function<void(std::vector<std::vector<float>>)> observe_update_gradients;
};

// Where and how large the measured peak was (compare with SimulationResult).
struct MemoryMeasurement {
  int64_t peak_bytes = 0;  // live program bytes after the Begin of the peak step
  CategoryBytes peak_breakdown;
  ExecutionPoint peak_at;
  std::string peak_step_name;  // "backward MatMul_3", as the simulator names it
  // The backend allocator's own counters over the whole run (per category: each its maximum).
  int64_t allocator_peak_total = 0;
  CategoryBytes allocator_category_peaks;
  int64_t scratch_peak_bytes = 0;  // backend temporaries outside the program
  // The same allocation sequence through the caching-allocator model.
  int64_t caching_peak_allocated_bytes = 0;
  int64_t caching_peak_reserved_bytes = 0;
  int64_t num_allocations = 0;
};

struct StepRecord {
  std::vector<double> micro_batch_losses;  // each micro-batch's mean loss (before 1/k, unscaled)
  double loss = 0.0;                       // their mean
  bool skipped = false;                    // overflow: the optimizer step was not applied
  float loss_scale = 1.0f;                 // the scale this step's backward used
  float next_loss_scale = 1.0f;            // after the scaler's update
  std::optional<double> gradient_norm;     // before clipping, when the program clips
  double seconds = 0.0;                    // wall time of the whole optimizer step
};

class Executor {
 public:
  // Evaluates every buffer's shape under `bindings` (the batch symbol bound to the
  // micro-batch), materialises constants and runs the setup phase (parameters initialised from
  // options.seed). Errors: unbound symbols, constants with no computable value, kernel errors.
  // REQUIRES: graph, program and backend outlive the executor.
  static Expected<std::unique_ptr<Executor>> Create(const Graph& graph,
                                                    const TrainingProgram& program,
                                                    const Bindings& bindings, Backend& backend,
                                                    const ExecutorOptions& options = {});
  ~Executor();
  Executor(const Executor&) = delete;
  Executor& operator=(const Executor&) = delete;

  int64_t accumulation_steps() const;
  // One optimizer step: RunMicroBatch for each of the k batches, then RunOptimizerPhase.
  // REQUIRES: batches.size() == accumulation_steps().
  Expected<StepRecord> RunOptimizerStep(const std::vector<MicroBatch>& batches);

  // The pieces of RunOptimizerStep, for checks that read the accumulated gradients before the
  // optimizer consumes them. The micro-batch index counts from 0 within the optimizer step.
  Status RunMicroBatch(const MicroBatch& batch);
  Expected<StepRecord> RunOptimizerPhase();

  // The parameter gradients as they are now (scaled by the loss scale in fp16 until the optimizer
  // phase unscales them), one entry per TrainingProgram::parameters (empty: none live).
  Expected<std::vector<std::vector<float>>> Gradients();
  // Master values of parameter `index` (TrainingProgram::parameters order); on a rank, what the
  // rank holds (its shard when the master is sharded).
  Expected<std::vector<float>> ParameterValues(int index);
  // Overwrites the master (and refreshes the working copy).
  Status SetParameterValues(int index, const std::vector<float>& values);
  float loss_scale() const;

  const MemoryMeasurement& memory() const;
  // Every Alloc/Free executed so far (empty unless ExecutorOptions::record_trace).
  const WalkTrace& trace() const;

 private:
  class Impl;
  explicit Executor(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace memplan
