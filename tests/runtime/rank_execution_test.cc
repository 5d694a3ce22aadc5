// verify --gpus: N simulated ranks run the per-rank program in one process (runtime/rank_group.h,
// runtime/collective_steps.h, runtime/rank_verification.h). The reference is independent of the
// sharding: the single-GPU program over the same global batch, whose gradients other suites check
// against PyTorch autograd.

#include <catch2/catch.hpp>
#include <thread>

#include "analyzer/derivation/program_derivation.h"
#include "analyzer/simulation/exact_allocator.h"
#include "runtime/collective_steps.h"
#include "runtime/cpu/cpu_backend.h"
#include "runtime/program_shapes.h"
#include "runtime/rank_group.h"
#include "runtime/rank_verification.h"
#include "runtime/verification.h"
#include "tests/runtime/executor_test_support.h"

namespace memplan {
namespace {

using testing::LoadFixture;

VerifyPlan RankPlan(const Graph& graph, ParallelStrategy strategy, int64_t ranks, int64_t nodes,
                    int64_t m, int64_t k) {
  VerifyPlan plan;
  plan.micro_batch = m;
  plan.program.accumulation_steps = k;
  DataParallelOptions dp;
  dp.strategy = strategy;
  dp.ranks = ranks;
  dp.nodes = nodes;
  plan.program.data_parallel = dp;
  plan.bindings = testing::BindNonBatchSymbols(graph, 8);
  return plan;
}

TEST_CASE("SliceOfShard: ceil(n / G) per position, the last one short or empty", "[ranks]") {
  // 10 elements over 4 ranks: 3, 3, 3 and 1 (positions 0..3 start at 0, 3, 6, 9).
  CHECK(SliceOfShard(10, 4, 0).begin == 0);
  CHECK(SliceOfShard(10, 4, 0).size == 3);
  CHECK(SliceOfShard(10, 4, 3).begin == 9);
  CHECK(SliceOfShard(10, 4, 3).size == 1);
  // 2 elements over 4 ranks: one each for positions 0 and 1, nothing for 2 and 3.
  CHECK(SliceOfShard(2, 4, 1).size == 1);
  CHECK(SliceOfShard(2, 4, 2).size == 0);
  CHECK(SliceOfShard(2, 4, 3).size == 0);
}

TEST_CASE("RankGroup: every rank reads every contribution, Abort wakes the waiting", "[ranks]") {
  RankGroup group(3);
  std::vector<float> seen(3, 0.0f);
  std::vector<std::thread> threads;
  for (int64_t r = 0; r < 3; ++r) {
    threads.emplace_back([&, r] {
      for (int round = 0; round < 2; ++round) {
        auto all = group.Exchange(r, {{static_cast<float>(10 * round + r)}});
        REQUIRE(all.ok());
        float sum = 0;
        for (const auto& c : **all) sum += c[0][0];
        seen[static_cast<size_t>(r)] += sum;
        REQUIRE(group.Done(r).ok());
      }
    });
  }
  for (auto& t : threads) t.join();
  // Round 0: 0 + 1 + 2 = 3; round 1: 10 + 11 + 12 = 33.
  CHECK(seen == std::vector<float>{36, 36, 36});

  RankGroup stopped(2);
  std::thread waiter([&] {
    auto all = stopped.Exchange(0, {{1.0f}});
    CHECK_FALSE(all.ok());
    CHECK(all.error().message.find("rank 1 failed") != std::string::npos);
  });
  stopped.Abort("rank 1 failed");
  waiter.join();
}

TEST_CASE("verify --gpus: every strategy the runtime runs matches the single-GPU step", "[ranks]") {
  const Graph graph = LoadFixture("transformer_opset17.onnx");
  struct Case {
    ParallelStrategy strategy;
    int64_t ranks, nodes;
  };
  for (const Case& c :
       {Case{ParallelStrategy::kDdp, 2, 1}, Case{ParallelStrategy::kZero1, 3, 1},
        Case{ParallelStrategy::kZero2, 2, 1}, Case{ParallelStrategy::kZero3, 3, 1},
        Case{ParallelStrategy::kFsdp, 2, 1}, Case{ParallelStrategy::kHybridShard, 4, 2}}) {
    INFO(ParallelStrategyName(c.strategy));
    VerifyPlan plan = RankPlan(graph, c.strategy, c.ranks, c.nodes, /*m=*/2, /*k=*/2);
    // A reduce bucket of 3000 elements: several flushes per backward, and the transformer's
    // 4096- to 12288-element weights too large for it, each reduced on its own.
    plan.program.data_parallel->zero_reduce_bucket_elements = 3000;
    VerifyOptions options;
    options.steps = 2;
    auto report = VerifyPlanOnBackend(graph, plan, testing::CpuBackends(), options);
    if (!report.ok()) FAIL(report.error().message);
    REQUIRE(report->ranks);
    CHECK(report->ranks->ranks == c.ranks);
    CHECK(report->ranks->shard_ranks ==
          (c.strategy == ParallelStrategy::kHybridShard ? 2 : c.ranks));
    REQUIRE(report->ranks->measured.size() == static_cast<size_t>(c.ranks));
    for (const MemoryMeasurement& m : report->ranks->measured)
      CHECK(m.peak_bytes == report->predicted.peak_bytes);
    CHECK(report->gradient.checked);
    CHECK(report->gradient.max_rel_error <= 1e-5);
    CHECK(report->ranks->weights.max_rel_error <= 1e-2);
    CHECK(report->passed);
  }
}

TEST_CASE("verify --gpus: mixed precision and clipping across sharded gradients", "[ranks]") {
  const Graph graph = LoadFixture("tiny_mlp.onnx");
  VerifyPlan plan = RankPlan(graph, ParallelStrategy::kFsdp, 2, 1, /*m=*/2, /*k=*/2);
  plan.program.precision = Precision::kFp16;
  plan.program.amp_mode = AmpMode::kMasterWeights;
  plan.program.clip_gradients = true;
  VerifyOptions options;
  options.steps = 2;
  options.executor.clip_max_norm = 1e-3;  // clips: the norm must be the whole gradient's
  auto report = VerifyPlanOnBackend(graph, plan, testing::CpuBackends(), options);
  if (!report.ok()) FAIL(report.error().message);
  CHECK(report->ranks->measured[1].peak_bytes == report->predicted.peak_bytes);
  CHECK(report->gradient.max_rel_error <= EquivalenceBound(Precision::kFp16));
  CHECK(report->ranks->weights.passed);
  CHECK(report->passed);
}

TEST_CASE("verify --gpus: a per-rank program without its collectives fails the check", "[ranks]") {
  // DDP without its all-reduces: each rank steps on its own samples' gradient, which is not the
  // global batch's. The check must see it.
  const Graph graph = LoadFixture("tiny_mlp.onnx");
  const VerifyPlan plan = RankPlan(graph, ParallelStrategy::kDdp, 2, 1, /*m=*/2, /*k=*/1);
  auto program = DeriveTrainingProgram(graph, plan.program);
  REQUIRE(program.ok());
  TrainingProgram broken = *program;
  int collectives = 0;
  for (Step& step : broken.steps) {
    if (step.kind != StepKind::kCollective) continue;
    // Among "the ranks of other nodes with this rank's position": on one node, itself alone.
    step.collective.group = CollectiveGroup::kAcrossNodes;
    ++collectives;
  }
  REQUIRE(collectives > 0);
  VerificationReport report;
  ExactAllocator exact;
  auto predicted = Simulate(broken, WithBatch(plan.bindings, broken.batch_symbol, plan.micro_batch),
                            exact, SimulationOptions());
  REQUIRE(predicted.ok());
  report.predicted = *predicted;
  // Averaging over one rank leaves each rank its own samples' gradients.
  const Status status =
      VerifyRanks(graph, plan, broken, testing::CpuBackends(), VerifyOptions(), report);
  if (!status.ok()) FAIL(status.error().message);
  CHECK(report.gradient.max_rel_error > 1e-3);
  CHECK_FALSE(report.gradient.passed);
  // A gather whose inputs are not the outputs' shards is refused, naming them, on every rank.
  for (Step& step : broken.steps)
    if (step.kind == StepKind::kCollective) step.collective.kind = CollectiveKind::kAllGather;
  const Status refused =
      VerifyRanks(graph, plan, broken, testing::CpuBackends(), VerifyOptions(), report);
  REQUIRE_FALSE(refused.ok());
  CHECK(refused.error().message.find("which is not its shard") != std::string::npos);
}

TEST_CASE("verify --gpus: what the runtime does not execute is an error naming it", "[ranks]") {
  const Graph graph = LoadFixture("tiny_mlp.onnx");
  {
    // A per-rank program outside a group has no one to gather from.
    const VerifyPlan plan = RankPlan(graph, ParallelStrategy::kFsdp, 2, 1, 2, 1);
    auto program = DeriveTrainingProgram(graph, plan.program);
    REQUIRE(program.ok());
    CpuBackend backend;
    auto alone = Executor::Create(graph, *program,
                                  WithBatch(plan.bindings, program->batch_symbol, 2), backend);
    REQUIRE_FALSE(alone.ok());
    CHECK(alone.error().message ==
          "a per-rank fsdp program runs only as a rank of a group "
          "(verify --gpus)");
  }
  VerifyPlan adafactor = RankPlan(graph, ParallelStrategy::kFsdp, 2, 1, 2, 1);
  adafactor.program.optimizer = OptimizerKind::kAdafactor;
  auto refused = VerifyPlanOnBackend(graph, adafactor, testing::CpuBackends(), {});
  REQUIRE_FALSE(refused.ok());
  CHECK(refused.error().message.find("elementwise") != std::string::npos);
}

}  // namespace
}  // namespace memplan
