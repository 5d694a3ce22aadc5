#include "runtime/verification.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <optional>
#include <string>

#include "analyzer/simulation/caching_allocator.h"
#include "analyzer/simulation/exact_allocator.h"
#include "analyzer/text/memory_size.h"
#include "analyzer/vocabulary/loss_kind.h"
#include "graph/ops/op_registry.h"
#include "runtime/program_shapes.h"
#include "runtime/rank_verification.h"
#include "runtime/weight_init.h"

namespace memplan {

namespace {
constexpr double kNonDeterministicFactor = 10.0;
}  // namespace

double EquivalenceBound(Precision precision) {
  switch (precision) {
    case Precision::kFp32:
      return 1e-5;
    case Precision::kFp16:
      return 1e-2;
    case Precision::kBf16:
      return 5e-2;
  }
  return 1e-5;
}

double SummationBound(Precision precision, int64_t samples) {
  const double ratio = static_cast<double>(samples) / kEquivalenceBoundSamples;
  return EquivalenceBound(precision) * std::sqrt(std::max(1.0, ratio));
}

double UnitRoundoff(Precision precision) {
  switch (precision) {
    case Precision::kFp32:
      return std::ldexp(1.0, -24);
    case Precision::kFp16:
      return std::ldexp(1.0, -11);
    case Precision::kBf16:
      return std::ldexp(1.0, -8);
  }
  return std::ldexp(1.0, -24);
}

double GradientNoiseFloor(Precision precision) {
  return UnitRoundoff(precision) / EquivalenceBound(precision);
}

double MaxRelativeError(const std::vector<std::vector<float>>& a,
                        const std::vector<std::vector<float>>& b, double floor_fraction) {
  double largest = 0.0;
  for (const std::vector<float>& gradient : b)
    for (float v : gradient) largest = std::max(largest, std::fabs(static_cast<double>(v)));
  const double floor = floor_fraction * largest;
  double worst = 0.0;
  for (size_t p = 0; p < a.size() && p < b.size(); ++p) {
    if (a[p].size() != b[p].size()) return INFINITY;
    double diff = 0.0, scale = floor;
    for (size_t i = 0; i < a[p].size(); ++i) {
      diff = std::max(diff, std::fabs(static_cast<double>(a[p][i]) - b[p][i]));
      scale = std::max(scale, std::fabs(static_cast<double>(b[p][i])));
    }
    if (diff > 0.0) worst = std::max(worst, scale > 0.0 ? diff / scale : INFINITY);
  }
  return worst;
}

namespace {

// Loss-scale backoffs tried when a gradient run overflows (GradScaler would do the same).
constexpr int kMaxScaleBackoffs = 24;
constexpr float kScaleBackoff = 0.25f;

// One run's accumulated gradients, unscaled.
struct GradientRun {
  std::vector<std::vector<float>> gradients;
  bool finite = true;
  bool deterministic = true;  // the backend's: equal programs give bit-equal gradients
  double loss = 0.0;          // the micro-batches' mean loss, when asked for
};

Expected<SimulationResult> SimulateExact(const TrainingProgram& program, const Bindings& bindings) {
  ExactAllocator exact;
  SimulationOptions options;
  options.record_timeline = false;
  return Simulate(program, bindings, exact, options);
}

Status CheckFits(const SimulationResult& predicted, const VerifyOptions& options,
                 const std::string& what) {
  if (predicted.peak_bytes > options.max_memory_bytes)
    return MakeError(what + " needs " + FormatBytes(predicted.peak_bytes) + ", more than the " +
                     FormatBytes(options.max_memory_bytes) +
                     " verification may use (--max-cpu-memory); verify a smaller micro-batch");
  return OkStatus();
}

// Divides the gradients read from an executor by its loss scale and records whether all are finite.
void UnscaleGradients(GradientRun& run, float scale) {
  for (auto& g : run.gradients) {
    for (float& v : g) {
      v /= scale;
      run.finite = run.finite && std::isfinite(v);
    }
  }
}

// Gradients of `k` micro-batches of `rows` samples (samples 0 .. k*rows-1), unscaled.
// `with_loss`: the optimizer phase then runs too, for the step's loss (GradientRun::loss).
Expected<GradientRun> RunGradients(const Graph& graph, const TrainingProgram& program,
                                   const Bindings& base, int64_t k, int64_t rows,
                                   const BackendFactory& backends, ExecutorOptions options,
                                   bool with_loss = false) {
  const Bindings bindings = WithBatch(base, program.batch_symbol, rows);
  MEMPLAN_TRY(SyntheticData data, SyntheticData::Create(graph, program, bindings, options.seed));
  options.accumulation_steps = k;
  for (int attempt = 0; attempt <= kMaxScaleBackoffs; ++attempt) {
    MEMPLAN_TRY(std::unique_ptr<Backend> backend, backends());
    GradientRun run;
    run.deterministic = backend->deterministic();
    {
      MEMPLAN_TRY(std::unique_ptr<Executor> executor,
                  Executor::Create(graph, program, bindings, *backend, options));
      for (int64_t i = 0; i < k; ++i) {
        MEMPLAN_TRY(MicroBatch batch, data.Batch(i * rows, rows));
        MEMPLAN_RETURN_IF_ERROR(executor->RunMicroBatch(batch));
      }
      MEMPLAN_TRY(run.gradients, executor->Gradients());
      const float scale = executor->loss_scale();
      UnscaleGradients(run, scale);
      if (run.finite || program.loss_scaling.mode == LossScalingMode::kNone) {
        if (with_loss) {
          MEMPLAN_TRY(StepRecord record, executor->RunOptimizerPhase());
          run.loss = record.loss;
        }
        return run;
      }
      options.initial_loss_scale = scale * kScaleBackoff;
    }
  }
  return MakeError("gradients overflow even at a tiny loss scale");
}

namespace {
// What every equivalence check below is given: the program to check over its graph and plan, the
// backends to run it on, and the verify options.
struct EquivalenceInputs {
  const Graph& graph;
  const TrainingProgram& program;
  const VerifyPlan& plan;
  const BackendFactory& backends;
  const VerifyOptions& options;
};
}  // namespace

// The first node whose registry entry has `property` (an OpSchema's bool member), or null.
const Node* FirstNodeWith(const Graph& graph, bool OpSchema::*property) {
  for (const Node& n : graph.nodes())
    if (OpRegistry::Get().FindOrUnknown(n.op_type, n.domain).*property) return &n;
  return nullptr;
}

namespace {

// Whether a loss term sums over the batch's samples: a sum loss of an output that carries the
// batch dimension. A sum of an output the model already reduced over the batch (the fused linear
// cross entropy's mean, a loss computed in the model) keeps that reduction's meaning, a mean as
// PyTorch's losses reduce by default.
bool SumsOverSamples(const Graph& graph, const TrainingProgram& program, const LossTerm& term) {
  if (LossAveragesOverBatch(term.kind) || !program.batch_symbol || !term.output.valid())
    return false;
  return graph.value(term.output).shape.NumElements().DegreeIn(*program.batch_symbol) > 0;
}

}  // namespace

Expected<EquivalenceResult> CheckGradientEquivalence(const EquivalenceInputs& in) {
  const auto& [graph, program, plan, backends, options] = in;
  EquivalenceResult r;
  r.bound = EquivalenceBound(program.precision);
  // Training normalises over the batch at such a node (BatchNormalization).
  if (const Node* coupled = FirstNodeWith(graph, &OpSchema::couples_batch)) {
    r.note = "skipped: " + coupled->op_type +
             " normalises over the micro-batch, so k micro-batches of m are not one batch of k*m";
    return r;
  }
  int64_t k = program.accumulation_steps, m = plan.micro_batch;
  if (k == 1) {
    if (m < 2 || m % 2 != 0) {
      r.note = "skipped: no accumulation and an odd micro-batch, nothing to split";
      return r;
    }
    k = 2;
    m /= 2;
  }
  MEMPLAN_TRY(SimulationResult full,
              SimulateExact(program, WithBatch(plan.bindings, program.batch_symbol, k * m)));
  if (full.peak_bytes > options.max_memory_bytes) {
    r.note = "skipped: the full batch of " + std::to_string(k * m) + " does not fit " +
             FormatBytes(options.max_memory_bytes);
    return r;
  }
  // Accumulation divides each micro-batch's loss by k (analyzer/vocabulary/loss_kind.h): a
  // mean loss's k micro-batches are then the whole batch, a sum's are 1/k of the whole batch's
  // sum. A program with both kinds of term has no whole-batch gradient to compare against.
  size_t sums = 0;
  for (const LossTerm& term : program.loss_terms) sums += SumsOverSamples(graph, program, term);
  if (sums > 0 && sums < program.loss_terms.size()) {
    r.note =
        "skipped: sum and mean loss terms together: k micro-batches of m are not one batch "
        "of k*m";
    return r;
  }
  const ExecutorOptions eo = options.SeededExecutor();
  MEMPLAN_TRY(GradientRun split, RunGradients(graph, program, plan.bindings, k, m, backends, eo));
  MEMPLAN_TRY(GradientRun whole,
              RunGradients(graph, program, plan.bindings, 1, k * m, backends, eo));
  if (sums > 0)
    for (std::vector<float>& gradient : whole.gradients)
      for (float& g : gradient) g /= static_cast<float>(k);
  r.checked = true;
  r.bound = SummationBound(program.precision, k * m);
  r.note = std::to_string(k) + " micro-batches of " + std::to_string(m) + " vs one batch of " +
           std::to_string(k * m) + (sums > 0 ? " over k (a sum loss)" : "") + " (dropout off)";
  if (!split.deterministic) {
    // Each run also sums in its own order (see CheckRecomputeEquivalence).
    r.bound *= kNonDeterministicFactor;
    r.note += " (a non-deterministic backend: within ten times the summation-order bound)";
  }
  r.max_rel_error =
      MaxRelativeError(split.gradients, whole.gradients, GradientNoiseFloor(program.precision));
  r.passed = split.finite && whole.finite && r.max_rel_error <= r.bound;
  return r;
}

// `plan_run`: the plan's gradients of micro-batch 0 when the training run already computed them
// exactly as this check would (FirstStepGradients); otherwise the check runs them itself.
Expected<EquivalenceResult> CheckRecomputeEquivalence(const EquivalenceInputs& in,
                                                      std::optional<GradientRun> plan_run = {}) {
  const auto& [graph, program, plan, backends, options] = in;
  EquivalenceResult r;
  r.bound = 0.0;
  ProgramOptions other = plan.program;
  if (program.recomputed.empty()) {
    for (size_t n = 0; n < graph.num_nodes(); ++n) other.recompute.push_back(NodeId(n));
    r.note = "the plan (no recompute) vs recomputing every node";
  } else {
    other.recompute.clear();
    r.note = "the plan's recompute vs none";
  }
  MEMPLAN_TRY(TrainingProgram alternative, DeriveTrainingProgram(graph, other));
  // Dropout stays on: the shared seed draws the same masks in both runs.
  const ExecutorOptions eo = options.SeededExecutor(/*disable_dropout=*/false);
  if (!plan_run) {
    MEMPLAN_TRY(plan_run,
                RunGradients(graph, program, plan.bindings, 1, plan.micro_batch, backends, eo));
  }
  const GradientRun& a = *plan_run;
  MEMPLAN_TRY(GradientRun b,
              RunGradients(graph, alternative, plan.bindings, 1, plan.micro_batch, backends, eo));
  r.checked = true;
  bool identical = a.gradients.size() == b.gradients.size();
  for (size_t p = 0; identical && p < a.gradients.size(); ++p) {
    // An empty gradient's data() may be null, which memcmp must not see.
    identical = a.gradients[p].size() == b.gradients[p].size() &&
                (a.gradients[p].empty() || std::memcmp(a.gradients[p].data(), b.gradients[p].data(),
                                                       a.gradients[p].size() * sizeof(float)) == 0);
  }
  r.max_rel_error =
      MaxRelativeError(a.gradients, b.gradients, GradientNoiseFloor(program.precision));
  r.passed = identical;
  if (!a.deterministic) {
    // Recomputing changes no arithmetic, but this backend sums in a different order each run
    // (atomic adds over a batch x spatial reduction per gradient element): ten times the
    // summation-order bound (measured on an H100: ResNet-50 at micro-batch 4, 1.24e-5 in fp32;
    // SummationBound for larger micro-batches).
    r.bound = kNonDeterministicFactor * SummationBound(program.precision, plan.micro_batch);
    r.passed = a.finite && b.finite && r.max_rel_error <= r.bound;
    r.note += " (a non-deterministic backend: within ten times the summation-order bound)";
  }
  return r;
}

// Check (4) of the header: one micro-batch of the fused plan against the unfused graph.
Expected<EquivalenceResult> CheckFusedLossEquivalence(const EquivalenceInputs& in) {
  const auto& [graph, program, plan, backends, options] = in;
  EquivalenceResult r;
  r.bound = EquivalenceBound(program.precision);
  const Graph& unfused = *plan.unfused_graph;
  ProgramOptions other = plan.program;
  other.loss = plan.unfused_loss;
  // Node ids are the fused graph's. Recompute changes no arithmetic (check 3), so the reference
  // recomputes nothing; the precision placement is carried over by node name (the head nodes the
  // fused node replaced get the derivation's default).
  other.recompute.clear();
  other.recompute_modules.clear();
  if (!plan.program.node_dtype.empty()) {
    other.node_dtype.assign(unfused.num_nodes(), std::nullopt);
    for (const Node& n : unfused.nodes()) {
      const std::optional<NodeId> id = graph.FindNode(n.name);
      if (id && id->index() < plan.program.node_dtype.size())
        other.node_dtype[n.id.index()] = plan.program.node_dtype[id->index()];
    }
  }
  MEMPLAN_TRY(TrainingProgram reference, DeriveTrainingProgram(unfused, other));
  const ExecutorOptions eo = options.SeededExecutor();
  MEMPLAN_TRY(GradientRun fused, RunGradients(graph, program, plan.bindings, 1, plan.micro_batch,
                                              backends, eo, /*with_loss=*/true));
  MEMPLAN_TRY(GradientRun whole, RunGradients(unfused, reference, plan.bindings, 1,
                                              plan.micro_batch, backends, eo, /*with_loss=*/true));
  // The parameters matched by name (both programs list them in their own graph's order).
  std::vector<std::vector<float>> a, b;
  for (size_t p = 0; p < reference.parameters.size() && p < whole.gradients.size(); ++p) {
    const std::string& name = unfused.value(reference.parameters[p].value).name;
    size_t q = 0;
    while (q < program.parameters.size() && graph.value(program.parameters[q].value).name != name)
      ++q;
    if (q >= program.parameters.size() || q >= fused.gradients.size()) {
      r.checked = true;
      r.passed = false;
      r.max_rel_error = INFINITY;
      r.note = "parameter '" + name + "' of the unfused graph is not in the fused plan";
      return r;
    }
    a.push_back(std::move(fused.gradients[q]));
    b.push_back(std::move(whole.gradients[p]));
  }
  r.checked = true;
  const double loss_error = std::fabs(fused.loss - whole.loss) / std::fabs(whole.loss);
  r.max_rel_error = std::max(MaxRelativeError(a, b, GradientNoiseFloor(program.precision)),
                             std::isnan(loss_error) ? INFINITY : loss_error);
  r.passed = fused.finite && whole.finite && r.max_rel_error <= r.bound;
  char losses[96];
  std::snprintf(losses, sizeof losses, "%.6g vs %.6g", fused.loss, whole.loss);
  r.note = "one micro-batch of " + std::to_string(plan.micro_batch) +
           ": the fused head and loss vs the unfused graph, " + std::to_string(a.size()) +
           " parameter gradients and the loss (" + losses + ")";
  return r;
}

// A plan without its data parallelism, and the single-GPU program it derives: what each rank
// runs a sharded copy of.
struct SingleGpuPlan {
  VerifyPlan plan;
  TrainingProgram program;
};

Expected<SingleGpuPlan> SingleGpuPlanOf(const Graph& graph, const VerifyPlan& plan) {
  SingleGpuPlan single{.plan = plan};
  single.plan.program.data_parallel.reset();
  MEMPLAN_TRY(single.program, DeriveTrainingProgram(graph, single.plan.program));
  return single;
}

// Whether the training run's first micro-batch is exactly the plan run CheckRecomputeEquivalence
// makes, so its gradients can stand in for it: one micro-batch per step (with k > 1 each
// micro-batch's loss is divided by k) and no stochastic node (the training run turns Dropout off,
// the recompute check keeps it on). Same seed, parameters, data and initial loss scale otherwise.
bool FirstStepIsRecomputePlanRun(const Graph& graph, const TrainingProgram& program) {
  return program.accumulation_steps == 1 && FirstNodeWith(graph, &OpSchema::stochastic) == nullptr;
}

// The training run of a single-GPU program: the same k*m samples every step. `first_gradients`
// (when not null) receives the first step's unscaled gradients if FirstStepIsRecomputePlanRun and
// they are finite (an overflow makes RunGradients back the scale off, which this run does not).
Status RunTraining(const Graph& graph, const VerifyPlan& plan, const TrainingProgram& program,
                   const BackendFactory& backends, const VerifyOptions& options,
                   VerificationReport& report, std::optional<GradientRun>* first_gradients) {
  const Bindings bindings = WithBatch(plan.bindings, program.batch_symbol, plan.micro_batch);
  MEMPLAN_TRY(std::unique_ptr<Backend> backend, backends());
  report.device = std::string(backend->name());
  // Dropout off keeps the loss trend free of mask noise; memory is unchanged (the masks are
  // still made and kept, the program allocates them either way).
  const ExecutorOptions eo = options.SeededExecutor();
  MEMPLAN_TRY(SyntheticData data, SyntheticData::Create(graph, program, bindings, options.seed));
  std::vector<MicroBatch> batches;
  for (int64_t i = 0; i < program.accumulation_steps; ++i) {
    MEMPLAN_TRY(MicroBatch b, data.Batch(i * plan.micro_batch, plan.micro_batch));
    batches.push_back(std::move(b));
  }
  MEMPLAN_TRY(std::unique_ptr<Executor> executor,
              Executor::Create(graph, program, bindings, *backend, eo));
  double seconds = 0.0;
  const bool keep_first = first_gradients != nullptr && FirstStepIsRecomputePlanRun(graph, program);
  for (int s = 0; s < options.steps; ++s) {
    double copy_seconds = 0.0;  // reading the gradients out is not part of the step's time
    if (s == 0 && keep_first) {
      MEMPLAN_RETURN_IF_ERROR(executor->RunMicroBatch(batches.front()));
      const auto copy_start = std::chrono::steady_clock::now();
      GradientRun run;
      run.deterministic = backend->deterministic();
      MEMPLAN_TRY(run.gradients, executor->Gradients());
      UnscaleGradients(run, executor->loss_scale());
      if (run.finite) *first_gradients = std::move(run);
      copy_seconds =
          std::chrono::duration<double>(std::chrono::steady_clock::now() - copy_start).count();
    }
    MEMPLAN_TRY(StepRecord record, s == 0 && keep_first ? executor->RunOptimizerPhase()
                                                        : executor->RunOptimizerStep(batches));
    record.seconds -= copy_seconds;
    seconds += record.seconds;
    report.steps.push_back(std::move(record));
  }
  report.measured = executor->memory();
  report.step_seconds = seconds / options.steps;
  const double samples =
      static_cast<double>(options.steps * program.accumulation_steps * plan.micro_batch);
  report.samples_per_second = seconds > 0 ? samples / seconds : 0.0;
  return OkStatus();
}

// The training run's loss and loss-scaler figures: whether every loss is finite, the scaler's
// skips and growths, and whether the loss fell (a later step, after at least one applied update,
// below the first).
void RecordLossAndScaler(VerificationReport& report) {
  for (size_t s = 0; s < report.steps.size(); ++s) {
    const StepRecord& record = report.steps[s];
    report.losses_finite = report.losses_finite && std::isfinite(record.loss);
    const int step = static_cast<int>(s);
    if (record.skipped) {
      report.scaler_events.push_back(
          {step, "overflow_skip", record.loss_scale, record.next_loss_scale});
    } else if (record.next_loss_scale > record.loss_scale) {
      report.scaler_events.push_back({step, "growth", record.loss_scale, record.next_loss_scale});
    }
  }
  const StepRecord* first = report.steps.empty() ? nullptr : &report.steps.front();
  bool applied = false;
  for (size_t s = 0; s + 1 < report.steps.size(); ++s) {
    applied = applied || !report.steps[s].skipped;
    if (!applied) continue;
    const bool lower = report.steps[s + 1].loss < first->loss;
    report.loss_decreased = report.loss_decreased.value_or(false) || lower;
  }
}

// The memory check of every rank measured and the equivalence checks the options ask for
// (gradients, recompute, fused loss); returns whether the ranks' weights agreed (true without
// --gpus).
Expected<bool> RunEquivalenceChecks(const Graph& graph, const VerifyPlan& plan,
                                    const TrainingProgram& program, const BackendFactory& backends,
                                    const VerifyOptions& options,
                                    std::optional<GradientRun> plan_first_gradients,
                                    VerificationReport& report) {
  const auto within = [&](const MemoryMeasurement& measured) {
    return static_cast<double>(measured.peak_bytes) <=
           static_cast<double>(report.predicted.peak_bytes) * (1.0 + options.tolerance);
  };
  report.memory_passed = within(report.measured);
  bool ranks_passed = true;
  if (report.ranks) {
    for (const MemoryMeasurement& measured : report.ranks->measured)
      report.memory_passed = report.memory_passed && within(measured);
    ranks_passed = report.ranks->weights.passed;
    // Recomputation is a property of the single-GPU program the ranks run a sharded copy of.
    if (options.check_recompute_equivalence) {
      MEMPLAN_TRY(const SingleGpuPlan single, SingleGpuPlanOf(graph, plan));
      MEMPLAN_TRY(report.recompute, CheckRecomputeEquivalence(
                                        {graph, single.program, single.plan, backends, options}));
      report.recompute.note += " (on the single-GPU program)";
    }
  } else {
    if (options.check_gradient_equivalence) {
      MEMPLAN_TRY(report.gradient,
                  CheckGradientEquivalence({graph, program, plan, backends, options}));
    }
    if (options.check_recompute_equivalence) {
      MEMPLAN_TRY(report.recompute,
                  CheckRecomputeEquivalence({graph, program, plan, backends, options},
                                            std::move(plan_first_gradients)));
    }
  }
  if (options.check_fused_loss_equivalence && plan.unfused_graph != nullptr) {
    // Per-rank programs run the fused node as the single-GPU program does: compare that one.
    MEMPLAN_TRY(const SingleGpuPlan single, SingleGpuPlanOf(graph, plan));
    MEMPLAN_TRY(report.fused_loss,
                CheckFusedLossEquivalence({graph, single.program, single.plan, backends, options}));
  }
  return ranks_passed;
}

}  // namespace

Expected<VerificationReport> VerifyPlanOnBackend(const Graph& graph, const VerifyPlan& plan,
                                                 const BackendFactory& backends,
                                                 const VerifyOptions& options) {
  if (options.steps < 1) return MakeError("--steps must be at least 1");
  if (plan.micro_batch < 1) return MakeError("the micro-batch must be at least 1");
  MEMPLAN_TRY(TrainingProgram program, DeriveTrainingProgram(graph, plan.program));
  const Bindings bindings = WithBatch(plan.bindings, program.batch_symbol, plan.micro_batch);
  VerificationReport report;
  report.micro_batch = plan.micro_batch;
  report.accumulation_steps = program.accumulation_steps;
  report.loss = program.loss;
  if (program.loss_terms.size() > 1)
    for (const LossTerm& term : program.loss_terms)
      report.loss_terms.emplace_back(graph.value(term.output).name, term.kind);
  report.tolerance = options.tolerance;
  MEMPLAN_TRY(report.predicted, SimulateExact(program, bindings));
  MEMPLAN_RETURN_IF_ERROR(CheckFits(report.predicted, options, "the plan"));
  {
    CachingAllocator caching;
    SimulationOptions so;
    so.record_timeline = false;
    MEMPLAN_TRY(report.predicted_caching, Simulate(program, bindings, caching, so));
  }

  std::optional<GradientRun> plan_first_gradients;  // the training run's, for check (3)
  if (!program.data_parallel_strategy.empty()) {
    // --gpus: the ranks of the per-rank program against the single-GPU program.
    MEMPLAN_RETURN_IF_ERROR(VerifyRanks(graph, plan, program, backends, options, report));
  } else {
    MEMPLAN_RETURN_IF_ERROR(
        RunTraining(graph, plan, program, backends, options, report,
                    options.check_recompute_equivalence ? &plan_first_gradients : nullptr));
  }
  RecordLossAndScaler(report);
  MEMPLAN_TRY(const bool ranks_passed,
              RunEquivalenceChecks(graph, plan, program, backends, options,
                                   std::move(plan_first_gradients), report));
  report.passed = report.memory_passed && report.gradient.passed && report.recompute.passed &&
                  report.fused_loss.passed && ranks_passed && report.losses_finite &&
                  report.loss_decreased.value_or(true);
  return report;
}

}  // namespace memplan
