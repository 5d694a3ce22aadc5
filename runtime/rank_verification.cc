#include "runtime/rank_verification.h"

#include <algorithm>
#include <cmath>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "analyzer/derivation/program_derivation.h"
#include "analyzer/text/memory_size.h"
#include "runtime/collective_steps.h"
#include "runtime/program_shapes.h"
#include "runtime/rank_group.h"
#include "runtime/weight_init.h"

namespace memplan {
namespace {

// How far a rank's updated parameters may be from the single-GPU step's, relative to its largest
// update. Adam divides by sqrt(v) + eps, which turns the summation-order difference of a gradient
// element near eps into up to a few 1e-4 of the update (measured on the transformer fixture); an
// update missed, doubled or applied to the wrong part is of the order of the update itself.
constexpr double kUpdateBound = 1e-2;

// What one run (a rank, or the single-GPU reference) leaves to compare.
struct RunResult {
  std::vector<StepRecord> records;
  std::vector<std::vector<float>> initial;    // masters before the first step
  std::vector<std::vector<float>> gradients;  // as the first optimizer step reads them
  std::vector<std::vector<float>> weights;    // masters after the first step
  MemoryMeasurement measured;
  double seconds = 0.0;
};

bool ElementwiseOptimizer(OptimizerKind kind) {
  switch (kind) {
    case OptimizerKind::kSgd:
    case OptimizerKind::kMomentum:
    case OptimizerKind::kAdam:
    case OptimizerKind::kAdamW:
    case OptimizerKind::kLion:
      return true;
    case OptimizerKind::kAdafactor:
    case OptimizerKind::kAdamW8bit:
    case OptimizerKind::kPagedAdamW8bit:
      return false;
  }
  return false;
}

// The unit roundoff of a stored value's dtype: how far two equal updates may land apart.
double UnitRoundoff(DType dtype) {
  switch (dtype) {
    case DType::kFloat16:
      return std::ldexp(1.0, -11);
    case DType::kBFloat16:
      return std::ldexp(1.0, -8);
    default:
      return std::ldexp(1.0, -24);
  }
}

Status CheckRunnable(const TrainingProgram& p) {
  bool sharded_state = false;
  for (const ParameterBuffers& pb : p.parameters)
    for (BufferId s : pb.optimizer_states)
      sharded_state = sharded_state || p.buffer(s).shard_of_elements != 0;
  if (sharded_state && !ElementwiseOptimizer(p.optimizer_kind))
    return MakeError(
        "verify --gpus: the runtime shards only elementwise optimizer state (sgd, "
        "momentum, adam, adamw, lion), not " +
        std::string(OptimizerKindName(p.optimizer_kind)) + "'s");
  return OkStatus();
}

// Runs `steps` optimizer steps; micro-batch j of each step is samples (first_batch + j) * m.
Status Run(const Graph& graph, const TrainingProgram& program, const Bindings& bindings,
           const SyntheticData& data, int64_t m, int64_t first_batch, int steps, Backend& backend,
           const ExecutorOptions& options, RunResult& out) {
  ExecutorOptions observed = options;
  bool first = true;
  observed.observe_update_gradients = [&](std::vector<std::vector<float>> gradients) {
    if (first) out.gradients = std::move(gradients);
    first = false;
  };
  MEMPLAN_TRY(std::unique_ptr<Executor> executor,
              Executor::Create(graph, program, bindings, backend, observed));
  const int64_t k = executor->accumulation_steps();
  std::vector<MicroBatch> batches;
  for (int64_t j = 0; j < k; ++j) {
    MEMPLAN_TRY(MicroBatch b, data.Batch((first_batch + j) * m, m));
    batches.push_back(std::move(b));
  }
  for (size_t i = 0; i < program.parameters.size(); ++i) {
    MEMPLAN_TRY(std::vector<float> values, executor->ParameterValues(static_cast<int>(i)));
    out.initial.push_back(std::move(values));
  }
  for (int s = 0; s < steps; ++s) {
    for (const MicroBatch& b : batches) MEMPLAN_RETURN_IF_ERROR(executor->RunMicroBatch(b));
    MEMPLAN_TRY(StepRecord record, executor->RunOptimizerPhase());
    out.seconds += record.seconds;
    out.records.push_back(std::move(record));
    if (s == 0) {
      for (size_t i = 0; i < program.parameters.size(); ++i) {
        MEMPLAN_TRY(std::vector<float> values, executor->ParameterValues(static_cast<int>(i)));
        out.weights.push_back(std::move(values));
      }
    }
  }
  out.measured = executor->memory();
  return OkStatus();
}

// The reference values rank `rank` holds of `whole` in `buffer`: all of them, or its shard's part.
ShardSlice HeldSlice(const TrainingProgram& p, BufferId buffer, int64_t whole, int64_t rank) {
  if (!buffer.valid() || p.buffer(buffer).shard_of_elements == 0) return ShardSlice{0, whole};
  return SliceOfShard(whole, p.shard_ranks, ShardPosition(p, rank));
}

// max |held - reference| over what the rank holds (elements where `skip` is true left out).
double MaxDifference(const std::vector<float>& held, const std::vector<float>& reference,
                     const ShardSlice& slice, const std::vector<bool>& skip) {
  double worst = 0.0;
  if (static_cast<int64_t>(held.size()) < slice.size) return INFINITY;
  for (int64_t e = 0; e < slice.size; ++e) {
    const size_t r = static_cast<size_t>(slice.begin + e);
    if (!skip.empty() && skip[r]) continue;
    worst = std::max(worst, std::fabs(static_cast<double>(held[static_cast<size_t>(e)]) -
                                      static_cast<double>(reference[r])));
  }
  return worst;
}

double MaxAbs(const std::vector<float>& v) {
  double m = 0.0;
  for (float x : v) m = std::max(m, std::fabs(static_cast<double>(x)));
  return m;
}

// The largest MaxDifference over the ranks between each rank's `held` values of parameter
// `parameter` (in `buffer`) and the part of `reference` that rank holds.
double WorstRankDifference(const TrainingProgram& p, const std::vector<RunResult>& ranks,
                           std::vector<std::vector<float>> RunResult::*held, size_t parameter,
                           BufferId buffer, const std::vector<float>& reference,
                           const std::vector<bool>& skip) {
  double worst = 0.0;
  for (size_t q = 0; q < ranks.size(); ++q) {
    const ShardSlice slice =
        HeldSlice(p, buffer, static_cast<int64_t>(reference.size()), static_cast<int64_t>(q));
    worst = std::max(worst, MaxDifference((ranks[q].*held)[parameter], reference, slice, skip));
  }
  return worst;
}

EquivalenceResult CompareGradients(const TrainingProgram& p, const std::vector<RunResult>& ranks,
                                   const RunResult& reference, double bound) {
  EquivalenceResult r{.checked = true, .bound = bound};
  for (size_t i = 0; i < p.parameters.size(); ++i) {
    if (i >= reference.gradients.size() || reference.gradients[i].empty()) continue;
    const std::vector<float>& want = reference.gradients[i];
    const double scale = MaxAbs(want);
    const double diff =
        WorstRankDifference(p, ranks, &RunResult::gradients, i, p.parameters[i].gradient, want, {});
    if (diff > 0.0)
      r.max_rel_error = std::max(r.max_rel_error, scale > 0 ? diff / scale : INFINITY);
  }
  r.passed = r.max_rel_error <= r.bound;
  return r;
}

EquivalenceResult CompareWeights(const TrainingProgram& p, const std::vector<RunResult>& ranks,
                                 const RunResult& reference, double bound) {
  EquivalenceResult r{.checked = true, .bound = bound};
  int64_t left_out = 0;
  for (size_t i = 0; i < p.parameters.size(); ++i) {
    const std::vector<float>& before = reference.initial[i];
    const std::vector<float>& after = reference.weights[i];
    double update = 0.0;
    for (size_t e = 0; e < after.size(); ++e)
      update = std::max(update, std::fabs(static_cast<double>(after[e]) - before[e]));
    // Elements whose gradient is zero up to rounding: their Adam direction is the rounding's.
    std::vector<bool> skip(after.size(), false);
    if (i < reference.gradients.size() && reference.gradients[i].size() == after.size()) {
      const double noise = bound * MaxAbs(reference.gradients[i]);
      for (size_t e = 0; e < after.size(); ++e) {
        skip[e] = std::fabs(static_cast<double>(reference.gradients[i][e])) <= noise;
        left_out += skip[e] ? 1 : 0;
      }
    }
    const double rounding =
        4.0 * UnitRoundoff(p.buffer(p.parameters[i].master).dtype) * MaxAbs(after);
    const double beyond = std::max(0.0, WorstRankDifference(p, ranks, &RunResult::weights, i,
                                                            p.parameters[i].master, after, skip) -
                                            rounding);
    if (beyond > 0.0)
      r.max_rel_error = std::max(r.max_rel_error, update > 0 ? beyond / update : INFINITY);
  }
  r.passed = r.max_rel_error <= r.bound;
  r.note =
      "each rank's parameters after one step vs the single-GPU step, relative to its largest "
      "update (" +
      std::to_string(left_out) + " elements with a gradient within rounding of 0 left out)";
  return r;
}

// Runs the n ranks of `per_rank` in threads over one RankGroup, rank r on micro-batches r*k ..
// r*k + k-1 of `data`; a rank's failure stops the others. The first rank's own failure is the
// error, not a rank stopped by it.
Expected<std::vector<RunResult>> RunRanks(const Graph& graph, const TrainingProgram& per_rank,
                                          const Bindings& bindings, const SyntheticData& data,
                                          int64_t m, int steps, const BackendFactory& backends,
                                          const ExecutorOptions& eo) {
  const int64_t n = per_rank.data_parallel_ranks;
  const int64_t k = per_rank.accumulation_steps;
  std::vector<std::unique_ptr<Backend>> rank_backends;
  for (int64_t r = 0; r < n; ++r) {
    MEMPLAN_TRY(std::unique_ptr<Backend> backend, backends());
    rank_backends.push_back(std::move(backend));
  }
  RankGroup group(n);
  std::vector<RunResult> runs(static_cast<size_t>(n));
  std::vector<Status> status(static_cast<size_t>(n), OkStatus());
  {
    std::vector<std::thread> threads;
    for (int64_t r = 0; r < n; ++r) {
      threads.emplace_back([&, r] {
        ExecutorOptions mine = eo;
        mine.rank_group = &group;
        mine.rank = r;
        const size_t i = static_cast<size_t>(r);
        status[i] =
            Run(graph, per_rank, bindings, data, m, r * k, steps, *rank_backends[i], mine, runs[i]);
        if (!status[i].ok())
          group.Abort("rank " + std::to_string(r) + ": " + status[i].error().message);
      });
    }
    for (std::thread& t : threads) t.join();
  }
  for (int64_t r = 0; r < n; ++r) {
    const Status& s = status[static_cast<size_t>(r)];
    if (!s.ok() && s.error().message.rfind("another rank stopped", 0) != 0)
      return MakeError("rank " + std::to_string(r) + ": " + s.error().message);
  }
  for (const Status& s : status) MEMPLAN_RETURN_IF_ERROR(s);
  return runs;
}

}  // namespace

Status VerifyRanks(const Graph& graph, const VerifyPlan& plan, const TrainingProgram& per_rank,
                   const BackendFactory& backends, const VerifyOptions& options,
                   VerificationReport& report) {
  MEMPLAN_RETURN_IF_ERROR(CheckRunnable(per_rank));
  const int64_t n = per_rank.data_parallel_ranks;
  const int64_t k = per_rank.accumulation_steps;
  const int64_t m = plan.micro_batch;
  if (report.predicted.peak_bytes > options.max_memory_bytes / std::max<int64_t>(1, n + 1))
    return MakeError("verify --gpus " + std::to_string(n) + " runs " + std::to_string(n) +
                     " ranks and a single-GPU reference of " +
                     FormatBytes(report.predicted.peak_bytes) + " or more each, more than the " +
                     FormatBytes(options.max_memory_bytes) +
                     " verification may use (--max-cpu-memory); verify a smaller micro-batch");
  // The single-GPU program of the same global batch.
  ProgramOptions single = plan.program;
  single.data_parallel.reset();
  single.accumulation_steps = k * n;
  MEMPLAN_TRY(TrainingProgram reference_program, DeriveTrainingProgram(graph, single));
  const Bindings bindings = WithBatch(plan.bindings, per_rank.batch_symbol, m);
  MEMPLAN_TRY(SyntheticData data,
              SyntheticData::Create(graph, reference_program, bindings, options.seed));
  const ExecutorOptions eo = options.SeededExecutor();

  RunResult reference;
  {
    MEMPLAN_TRY(std::unique_ptr<Backend> backend, backends());
    report.device = std::string(backend->name());
    MEMPLAN_RETURN_IF_ERROR(
        Run(graph, reference_program, bindings, data, m, 0, 1, *backend, eo, reference));
  }

  MEMPLAN_TRY(std::vector<RunResult> runs,
              RunRanks(graph, per_rank, bindings, data, m, options.steps, backends, eo));

  RankCheck check;
  check.strategy = per_rank.data_parallel_strategy;
  check.ranks = n;
  check.shard_ranks = per_rank.shard_ranks;
  for (const RunResult& run : runs) check.measured.push_back(run.measured);
  const double bound = EquivalenceBound(per_rank.precision);
  report.gradient = CompareGradients(per_rank, runs, reference, bound);
  report.gradient.note = std::to_string(n) + " ranks x " + std::to_string(k) +
                         " micro-batches of " + std::to_string(m) +
                         " vs the single-GPU program over the same " + std::to_string(n * k * m) +
                         " samples (dropout off)";
  check.weights = CompareWeights(per_rank, runs, reference, std::max(bound, kUpdateBound));
  const bool rank_skipped = runs[0].records[0].skipped;
  if (rank_skipped != reference.records[0].skipped) {
    check.weights.passed = false;
    check.weights.note = "the first step overflowed on one side only (ranks: " +
                         std::string(rank_skipped ? "skipped" : "applied") + ")";
  }
  report.measured = runs[0].measured;
  report.steps = runs[0].records;
  // The global batch's loss: the mean of every rank's.
  for (size_t s = 0; s < report.steps.size(); ++s) {
    double sum = 0.0;
    for (const RunResult& run : runs) sum += run.records[s].loss;
    report.steps[s].loss = sum / static_cast<double>(n);
  }
  report.step_seconds = runs[0].seconds / options.steps;
  const double samples = static_cast<double>(options.steps * k * m * n);
  report.samples_per_second = runs[0].seconds > 0 ? samples / runs[0].seconds : 0.0;
  report.ranks = std::move(check);
  return OkStatus();
}

}  // namespace memplan
