#pragma once
// `memplan verify`'s engine: runs a plan on a backend and checks it against the simulator.
//
//  1. Memory: the plan's program runs `steps` optimizer steps of k micro-batches on synthetic
//     data; the measured peak (live program bytes after each step's Begin, per category) is
//     compared with the simulator's exact prediction. Passes when measured <= predicted * (1 +
//     tolerance); on the CPU backend the two are equal byte for byte.
//  2. Gradient equivalence: the gradient accumulated over k micro-batches of m equals the gradient
//     of one batch of k*m (with k = 1 plans: 2 micro-batches of m/2 against one of m). Dropout is
//     off in both runs (its masks depend on the batch shape); models with BatchNormalization are
//     skipped (it normalises over the micro-batch, so accumulation is not equivalent by design).
//     Error: MaxRelativeError (per parameter, with a noise floor). Bounds per precision
//     (EquivalenceBound, grown with the batch by SummationBound): the two runs differ only by
//     summation order and by the rounding of each micro-batch's gradient to the gradient dtype
//     before it is added. A backend that sums in a new order each run (CUDA's atomic adds) gets
//     ten times that bound, here and in (3).
//  3. Recompute equivalence: one micro-batch with and without the plan's recompute (a plan with
//     none is compared with recomputing every node) gives bitwise identical gradients: the same
//     kernels run on the same data, Dropout masks are seeded per node and micro-batch.
//  4. Fused loss (--fused-loss): one micro-batch of the plan, whose head and cross entropy are
//     memplan:FusedLinearCrossEntropy (runtime/cpu/kernels/fused_loss.cc), against the same
//     micro-batch through the unfused graph (the head's MatMul/Gemm and the backend's cross
//     entropy), with the same initial parameters and data: every parameter's gradient, matched
//     by name, and the loss. Error: the largest of MaxRelativeError and
//     |loss_a - loss_b| / |loss_b|; bound EquivalenceBound: the two differ by summation order
//     (the fused kernel sums grad_weight chunk by chunk of rows) and, in fp16/bf16, by rounding
//     each chunk's partial grad_weight to the gradient dtype, the same two effects as (2) with
//     chunks in place of micro-batches.
//  5. Training: the loss per step, that it falls on the synthetic task (the same k*m samples every
//     step, so the model memorises them; Dropout off so masks add no noise to the trend),
//     loss-scaler events, step time and samples/s.

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "analyzer/derivation/program_derivation.h"
#include "analyzer/simulation/simulator.h"
#include "graph/expected.h"
#include "graph/graph.h"
#include "graph/symbols.h"
#include "runtime/backend.h"
#include "runtime/executor.h"

namespace memplan {

// The relative error two gradient computations of the same batch may differ by when they differ
// only in how the batch was split: fp32 1e-5 (summation order: a few ulps of 2^-24 over sums of a
// few thousand terms); bf16 5e-2 and fp16 1e-2 (each of k micro-batch gradients is rounded to the
// 8 / 11 significant bits of the gradient dtype before it is added: a few units of 2^-8 / 2^-11).
double EquivalenceBound(Precision precision);

// EquivalenceBound for gradients summed over `samples` samples. It was set on micro-batches of
// up to kEquivalenceBoundSamples; rounding in a sum of n terms taken in another order grows like
// sqrt(n) (the probabilistic bound, Higham, "Accuracy and Stability of Numerical Algorithms"
// 3.6), so past that the bound grows as sqrt(samples / kEquivalenceBoundSamples). Measured: two
// runs of ResNet-50 on the CUDA backend (atomic adds, a new order each run) differ by 1.24e-5 at
// micro-batch 4 (H100) and 1.02e-4 at 855 (H200): ratio 8.2, where sqrt(855 / 4) = 14.6.
inline constexpr int64_t kEquivalenceBoundSamples = 8;
double SummationBound(Precision precision, int64_t samples);

// A gradient that is zero in exact arithmetic is computed as the roundoff of a cancelling sum,
// and its digits are noise that changes with the summation order: BERT's and OPT's attention key
// biases (softmax ignores a shift of a whole row of scores, so q . b_k cancels) come out near 1e-9
// of the largest gradient, and two orders disagree on them by O(1) of themselves. No computation
// in the precision's arithmetic resolves a difference below one unit roundoff of the quantities
// it combines, and the gradients' scale is set by the largest of them: so each parameter is
// compared at no finer a scale than GradientNoiseFloor * the largest gradient of all, the floor
// at which the bound allows exactly one unit roundoff of the largest (2^-24 in fp32, 2^-11 in
// fp16, 2^-8 in bf16; a bound grown with the samples grows that allowance with it). A wrong
// gradient still fails unless its error is below that one unit roundoff. (The floor was 1e-4,
// a sixtieth of an fp32 ulp of the largest: OPT, ViT, DINOv2 and MLP-Mixer failed it at 1.05e-5
// to 1.16e-5 against the bound 1e-5 on a parameter below the new floor, OPT's and ViT's key
// biases, while every other parameter agreed to 4e-7.)
double UnitRoundoff(Precision precision);
double GradientNoiseFloor(Precision precision);

// The largest relative difference between two sets of gradients (one vector per parameter):
// max over parameters of max|a - b| / max(max|b|, floor * the largest |b| of any parameter),
// `floor` GradientNoiseFloor of the precision. INFINITY where their sizes differ.
double MaxRelativeError(const std::vector<std::vector<float>>& a,
                        const std::vector<std::vector<float>>& b, double floor);

// What is verified: the program options (accumulation_steps = k) and the bindings of every
// symbol, the batch symbol bound to the micro-batch m.
struct VerifyPlan {
  ProgramOptions program;
  int64_t micro_batch = 1;
  Bindings bindings;
  // --fused-loss: the model before analyzer/derivation/fused_loss_plan.h fused its head and loss,
  // and the loss that graph's program appends (cross entropy); check (4) compares the plan with it.
  // Null for a plan without a fused loss. REQUIRES: outlives VerifyPlanOnBackend, and has the fused
  // graph's symbols (the rewrite keeps the symbol table), so `bindings` hold for it.
  const Graph* unfused_graph = nullptr;
  LossKind unfused_loss = LossKind::kCrossEntropy;
};

struct VerifyOptions {
  int steps = 3;            // optimizer steps of the training run
  double tolerance = 0.01;  // measured may exceed predicted by this fraction
  uint64_t seed = 0;        // parameters, data, dropout masks
  // Refuse plans whose predicted peak exceeds this (the CPU backend has host memory only).
  int64_t max_memory_bytes = int64_t{8} << 30;
  bool check_gradient_equivalence = true;
  bool check_recompute_equivalence = true;
  bool check_fused_loss_equivalence = true;  // with VerifyPlan::unfused_graph
  ExecutorOptions executor;                  // hyper-parameters; seed and dropout are set per run

  // The executor options of one run: `executor` seeded with `seed` (so the runs a check compares
  // draw the same parameters, data and masks), with dropout off unless a check keeps it.
  ExecutorOptions SeededExecutor(bool disable_dropout = true) const {
    ExecutorOptions eo = executor;
    eo.seed = seed;
    eo.disable_dropout = disable_dropout;
    return eo;
  }
};

struct EquivalenceResult {
  bool checked = false;
  bool passed = true;  // vacuously true when not checked
  double max_rel_error = 0.0;
  double bound = 0.0;
  std::string note;  // why it was skipped, or what was compared
};

struct LossScalerEvent {
  int step = 0;
  std::string event;  // "overflow_skip" | "growth"
  float scale_before = 0;
  float scale_after = 0;
};

// verify of a per-rank program (--gpus N): N ranks run in one process (runtime/rank_group.h)
// and are compared with the single-GPU program of the same global batch.
struct RankCheck {
  std::string strategy;                     // "ddp", "fsdp", ...
  int64_t ranks = 1;                        // N
  int64_t shard_ranks = 1;                  // the ranks a state is split over
  std::vector<MemoryMeasurement> measured;  // per rank; each compared with the same prediction
  // Each rank's part of the parameters after the first optimizer step against the single-GPU
  // step of the global batch; error relative to that step's largest update.
  EquivalenceResult weights;
};

struct VerificationReport {
  std::string device;
  int64_t micro_batch = 0;
  int64_t accumulation_steps = 1;
  LossKind loss = LossKind::kAuto;  // as resolved by the program
  // A loss over several outputs: each term's output and loss, in order; empty for one output.
  std::vector<std::pair<std::string, LossKind>> loss_terms;
  SimulationResult predicted;          // exact model
  SimulationResult predicted_caching;  // caching model
  MemoryMeasurement measured;
  bool memory_passed = false;
  double tolerance = 0;
  // Single GPU: k micro-batches against one batch of k*m. Per-rank program: every rank's
  // gradients (its shard, or the whole averaged gradient) against the single-GPU program's over
  // the global batch.
  EquivalenceResult gradient;
  EquivalenceResult recompute;
  EquivalenceResult fused_loss;    // --fused-loss: the fused plan against the unfused graph
  std::optional<RankCheck> ranks;  // per-rank programs only; `measured` is then rank 0's
  std::vector<StepRecord> steps;   // per rank program: rank 0's (every rank's loss is its own)
  std::vector<LossScalerEvent> scaler_events;
  bool losses_finite = true;
  std::optional<bool> loss_decreased;  // nullopt with fewer than 2 applied steps
  double step_seconds = 0;             // mean
  double samples_per_second = 0;
  bool passed = false;
};

using BackendFactory = std::function<Expected<std::unique_ptr<Backend>>()>;

// Errors (bad input, exit 2): derivation or binding errors, a predicted peak above
// options.max_memory_bytes, kernel errors (an op the backend cannot run).
Expected<VerificationReport> VerifyPlanOnBackend(const Graph& graph, const VerifyPlan& plan,
                                                 const BackendFactory& backends,
                                                 const VerifyOptions& options);

}  // namespace memplan
