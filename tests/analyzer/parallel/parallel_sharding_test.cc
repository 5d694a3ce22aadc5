// The per-rank data-parallel program (analyzer/derivation/rank_sharding.h): model states per
// stage against the ZeRO paper and DeepSpeed's estimators, DDP buckets, ZeRO-3 gathers, and the
// collective cost. Every expected byte count is derived in the comment above it.

#include <catch2/catch.hpp>

#include <algorithm>
#include <string>

#include "analyzer/baseline/plan_flags.h"
#include "analyzer/cost/collective_cost.h"
#include "analyzer/parallel/engine_options.h"
#include "analyzer/planning/planner.h"
#include "analyzer/precision/model_state_bytes.h"
#include "analyzer/simulation/simulator.h"
#include "tests/analyzer/derivation/program_test_derive.h"
#include "tests/analyzer/derivation/program_test_graphs.h"

namespace memplan::testing {
namespace {

constexpr int64_t kLargestLayer = 8192;  // W1 of TwoLayerMlp()
constexpr int64_t kRanks = 4;

DataParallelOptions Group(ParallelStrategy strategy) {
  DataParallelOptions dp = DataParallelGroup(strategy, kRanks);
  // Shard every parameter: DeepSpeed's default threshold (1e5 elements) would keep these small
  // matrices whole, and the closed forms assume all Psi partitioned.
  dp.zero3_param_persistence_threshold = 0;
  dp.fsdp_min_unit_parameters = 1;  // one FSDP unit per parameter, as ZeRO-3's modules
  return dp;
}

// fp16 mixed precision with Adam (K = 12: fp32 master 4 + two fp32 moments 8), the ZeRO paper's
// setting, sum loss.
ProgramOptions MixedAdam(ParallelStrategy strategy) {
  ProgramOptions options;
  options.loss = LossKind::kSum;
  options.optimizer = OptimizerKind::kAdam;
  options.precision = Precision::kFp16;
  options.data_parallel = Group(strategy);
  return options;
}

SimulationResult Run(const TestGraph& t, const TrainingProgram& program, int64_t batch = 2) {
  return SimulateExactly(program, t.Bind(batch));
}

ModelStateBytes StatesOf(const TestGraph& t, const ProgramOptions& options) {
  const TrainingProgram program = DeriveVerified(t.graph, options);
  return ModelStateBytesOf(program, Run(t, program).buffer_bytes);
}

TEST_CASE("ZeRO paper (2 + 2 + K) Psi split per stage, per rank", "[parallel]") {
  const TestGraph t = TwoLayerMlp();
  // Psi = 12288, N = 4, K = 12 (master 4 + moments 8). fp16 parameters and gradients: 2 Psi =
  // 24576 bytes whole, 2 Psi / 4 = 6144 sharded; masters 4 Psi = 49152 whole, 12288 sharded;
  // moments 8 Psi = 98304 whole, 24576 sharded.
  SECTION("ddp: (2 + 2 + K) Psi = 16 Psi = 196608") {
    const ModelStateBytes s = StatesOf(t, MixedAdam(ParallelStrategy::kDdp));
    CHECK(s.parameters == 2 * kPsi);
    CHECK(s.gradients == 2 * kPsi);
    CHECK(s.master_weights == 4 * kPsi);
    CHECK(s.optimizer_state == 8 * kPsi);
    CHECK(s.total() == 196608);
  }
  SECTION("zero1 (P_os): 4 Psi + K Psi / N = 49152 + 36864 = 86016") {
    const ModelStateBytes s = StatesOf(t, MixedAdam(ParallelStrategy::kZero1));
    CHECK(s.parameters == 24576);
    CHECK(s.gradients == 24576);
    CHECK(s.master_weights == 12288);
    CHECK(s.optimizer_state == 24576);
    CHECK(s.total() == 86016);
  }
  SECTION("zero2 (P_os+g): 2 Psi + (2 + K) Psi / N = 24576 + 43008 = 67584") {
    const ModelStateBytes s = StatesOf(t, MixedAdam(ParallelStrategy::kZero2));
    CHECK(s.parameters == 24576);
    CHECK(s.gradients == 6144);
    CHECK(s.total() == 67584);
  }
  SECTION("zero3 and fsdp (P_os+g+p): (2 + 2 + K) Psi / N = 49152") {
    for (ParallelStrategy strategy : {ParallelStrategy::kZero3, ParallelStrategy::kFsdp}) {
      const ModelStateBytes s = StatesOf(t, MixedAdam(strategy));
      CHECK(s.parameters == 6144);
      CHECK(s.gradients == 6144);
      CHECK(s.master_weights == 12288);
      CHECK(s.optimizer_state == 24576);
      CHECK(s.total() == 49152);
    }
  }
}

// Bytes of the buffers named `name` whose ".shard" twin exists: the full (unsharded) copies a
// rank holds only transiently (gathered parameters, gradients before their reduce).
int64_t TransientFullBytes(const TrainingProgram& program, const std::vector<int64_t>& bytes,
                           BufferRole role) {
  int64_t total = 0;
  for (const Buffer& b : program.buffers) {
    if (b.role != role) continue;
    const bool has_shard =
        std::any_of(program.buffers.begin(), program.buffers.end(),
                    [&](const Buffer& s) { return s.name == b.name + ".shard"; });
    if (has_shard) total += bytes[b.id.index()];
  }
  return total;
}

// Bytes of every parameter's master gradient: the fp32 gradient partition of a non-fused mixed
// optimizer (MasterGradientMode::kFullCopy).
int64_t MasterGradientBytes(const TrainingProgram& program, const std::vector<int64_t>& bytes) {
  int64_t total = 0;
  for (const ParameterBuffers& pb : program.parameters) total += bytes[pb.master_gradient.index()];
  return total;
}

// What DeepSpeed's estimators count, for `strategy` on `t`: the program of MixedAdam with
// memplan's non-fused mixed optimizer (the fp32 gradient partition the estimators include),
// simulated, with its model states and master gradients.
struct EstimatedStates {
  TrainingProgram program;
  SimulationResult sim;
  ModelStateBytes states;
  int64_t master_gradients = 0;
};

EstimatedStates EstimatorStates(const TestGraph& t, ParallelStrategy strategy) {
  ProgramOptions options = MixedAdam(strategy);
  options.master_gradients = MasterGradientMode::kFullCopy;
  EstimatedStates e;
  e.program = DeriveVerified(t.graph, options);
  e.sim = Run(t, e.program);
  e.states = ModelStateBytesOf(e.program, e.sim.buffer_bytes);
  e.master_gradients = MasterGradientBytes(e.program, e.sim.buffer_bytes);
  return e;
}

TEST_CASE("DeepSpeed estimate_zero2/3_model_states_mem_needs from the per-rank buffers",
          "[parallel]") {
  const TestGraph t = TwoLayerMlp();
  // DeepSpeed's estimators (deepspeed/runtime/zero/stage_1_and_2.py, stage3.py) without offload,
  // num_gpus_per_node = 4, num_nodes = 1, count an fp32 gradient partition (4 Psi / N) besides
  // masters and moments: memplan's non-fused mixed optimizer (MasterGradientMode::kFullCopy).
  SECTION("zero2: 4 Psi + int(16 Psi / N) = 49152 + 49152 = 98304") {
    const EstimatedStates e = EstimatorStates(t, ParallelStrategy::kZero2);
    const ModelStateBytes& s = e.states;
    const int64_t master_gradients = e.master_gradients;
    const int64_t full_gradients =
        TransientFullBytes(e.program, e.sim.buffer_bytes, BufferRole::kParameterGradient);
    // 4 Psi: fp16 parameters (2 Psi = 24576) + the full fp16 gradients of a micro-batch before
    // their reduce (2 Psi = 24576). 16 Psi / N: masters 12288 + moments 24576 + fp32 gradient
    // partition 12288 = 49152.
    CHECK(s.parameters + full_gradients == 4 * kPsi);
    CHECK(s.master_weights + s.optimizer_state + master_gradients == 16 * kPsi / kRanks);
    CHECK(s.parameters + full_gradients + s.master_weights + s.optimizer_state + master_gradients ==
          98304);
  }
  SECTION("zero3: 4 L + int(18 Psi / N) = 32768 + 55296 = 88064") {
    const EstimatedStates e = EstimatorStates(t, ParallelStrategy::kZero3);
    const ModelStateBytes& s = e.states;
    const int64_t master_gradients = e.master_gradients;
    // largest_layer_memory = 4 L: the largest unit gathered at once (W1 in fp16: 2 * 8192 =
    // 16384) and its full fp16 gradient (16384).
    int64_t largest_gather = 0;
    for (const Step& step : e.program.steps) {
      if (step.kind != StepKind::kCollective || step.collective.kind != CollectiveKind::kAllGather)
        continue;
      int64_t bytes = 0;
      for (BufferId b : step.outputs) bytes += e.sim.buffer_bytes[b.index()];
      largest_gather = std::max(largest_gather, bytes);
    }
    CHECK(largest_gather == 2 * kLargestLayer);
    CHECK(largest_gather + 2 * kLargestLayer == 4 * kLargestLayer);
    // 18 Psi / N: fp16 parameter shards 6144 + masters 12288 + moments 24576 + fp32 gradient
    // partition 12288 = 55296. (memplan also keeps the fp16 gradient shards, 2 Psi / N = 6144,
    // which DeepSpeed's estimator leaves out.)
    CHECK(s.parameters + s.master_weights + s.optimizer_state + master_gradients ==
          18 * kPsi / kRanks);
    CHECK(4 * kLargestLayer + 18 * kPsi / kRanks == 88064);
    CHECK(s.gradients == 2 * kPsi / kRanks);
  }
}

// fp32, SGD, sum loss: parameters and gradients only, 4 bytes each.
ProgramOptions Fp32Sgd(DataParallelOptions dp) {
  ProgramOptions options = SumLossSgd();
  options.data_parallel = dp;
  return options;
}

TEST_CASE("DDP gradient buckets", "[parallel]") {
  const TestGraph t = TwoLayerMlp();
  DataParallelOptions dp = Group(ParallelStrategy::kDdp);
  SECTION(
      "default caps: both gradients (4 Psi = 49152 bytes < the 1 MiB first bucket) share "
      "one bucket and one all-reduce") {
    const TrainingProgram program = DeriveVerified(t.graph, Fp32Sgd(dp));
    int reduces = 0;
    for (const Step& s : program.steps) {
      if (s.kind != StepKind::kCollective) continue;
      ++reduces;
      CHECK(s.collective.kind == CollectiveKind::kAllReduce);
      CHECK(s.collective.payload_bytes == 4 * kPsi);
    }
    CHECK(reduces == 1);
  }
  SECTION("buckets are a second copy of the gradients unless gradient_as_bucket_view") {
    // With a 1-byte cap every gradient closes its own bucket: two all-reduces of 4 * 4096 =
    // 16384 (W2, ready first) and 4 * 8192 = 32768 (W1) bytes.
    dp.ddp_first_bucket_bytes = 1;
    dp.ddp_bucket_cap_bytes = 1;
    const TrainingProgram copies = DeriveVerified(t.graph, Fp32Sgd(dp));
    std::vector<int64_t> payloads;
    for (const Step& s : copies.steps)
      if (s.kind == StepKind::kCollective) payloads.push_back(s.collective.payload_bytes);
    CHECK(payloads == std::vector<int64_t>{16384, 32768});
    dp.ddp_gradient_as_bucket_view = true;
    const TrainingProgram views = DeriveVerified(t.graph, Fp32Sgd(dp));
    // Both peaks are at W1's backward step (the last), with the same activations live.
    // Copies: parameters 49152 + buckets 49152 + W2's gradient 16384 + W1's fresh gradient 32768,
    // which AccumulateGrad steals as W1's .grad (no second copy).
    // Views: parameters 49152 + the gradients (bucket views, live since setup) 49152 + W1's fresh
    // gradient 32768, which must be added into the existing view (it cannot be stolen).
    // Difference: 147456 - 131072 = 16384 (the buckets save 4 Psi but cost W1's 32768 transient).
    CHECK(Run(t, copies).peak_bytes - Run(t, views).peak_bytes == 16384);
    // After the step, set_to_none frees the copies' gradients but not the views: both keep
    // parameters + 4 Psi of gradient storage = 98304 bytes.
    CHECK(Run(t, copies).persistent_bytes == 98304);
    CHECK(Run(t, views).persistent_bytes == 98304);
  }
}

TEST_CASE("ZeRO-2 copies each ready gradient into the reduce bucket at its offset", "[parallel]") {
  const TestGraph t = TwoLayerMlp();
  DataParallelOptions dp = Group(ParallelStrategy::kZero2);
  auto copies_and_reduces = [&](int64_t bucket_elements) {
    dp.zero_reduce_bucket_elements = bucket_elements;
    const TrainingProgram program = DeriveVerified(t.graph, Fp32Sgd(dp));
    std::vector<int64_t> offsets;
    std::vector<size_t> reduce_outputs;
    for (const Step& s : program.steps) {
      if (s.kind == StepKind::kBucketCopy) offsets.push_back(s.bucket_offset);
      if (s.kind == StepKind::kCollective && s.collective.kind == CollectiveKind::kReduceScatter)
        reduce_outputs.push_back(s.outputs.size());
    }
    return std::make_pair(offsets, reduce_outputs);
  };
  // Gradient-ready order is W2 (4096 elements) then W1 (8192). A bucket of Psi = 12288 takes
  // both back to back (offsets 0 and 4096) and is reduced once into the two shards.
  auto [whole_offsets, whole_reduces] = copies_and_reduces(kPsi);
  CHECK(whole_offsets == std::vector<int64_t>{0, 4096});
  CHECK(whole_reduces == std::vector<size_t>{2});
  // A bucket of 8192: W1 would overflow it after W2 (4096 + 8192), so W2's bucket is reduced
  // first and W1 starts a new one at offset 0.
  auto [split_offsets, split_reduces] = copies_and_reduces(8192);
  CHECK(split_offsets == std::vector<int64_t>{0, 0});
  CHECK(split_reduces == std::vector<size_t>{1, 1});
}

TEST_CASE("engine options by the engines' names", "[parallel]") {
  DataParallelOptions dp;
  REQUIRE(ApplyEngineOptions("bucket_cap_mb=50,gradient_as_bucket_view=true,reduce_bucket_size="
                             "1000,stage3_param_persistence_threshold=0,min_num_params=0,"
                             "reshard_after_forward=false,prefetch_units=2",
                             dp)
              .ok());
  CHECK(dp.ddp_bucket_cap_bytes == 50 * 1048576);  // DDP's bucket_cap_mb is MiB
  CHECK(dp.ddp_gradient_as_bucket_view);
  CHECK(dp.zero_reduce_bucket_elements == 1000);
  CHECK(dp.zero3_param_persistence_threshold == 0);
  CHECK(dp.fsdp_min_unit_parameters == 0);
  CHECK_FALSE(dp.reshard_after_forward);
  CHECK(dp.prefetch_units == 2);
  // Only what differs from the defaults is written, and reads back to the same options.
  const nlohmann::ordered_json j = EngineOptionsToJson(dp);
  CHECK(j.size() == 7);
  CHECK(j["bucket_cap_mb"] == 50);
  CHECK(EngineOptionsToJson(DataParallelOptions()).empty());
  DataParallelOptions back;
  REQUIRE(EngineOptionsFromJson(nlohmann::json::parse(j.dump()), back).ok());
  CHECK(back.ddp_bucket_cap_bytes == dp.ddp_bucket_cap_bytes);
  CHECK(back.prefetch_units == 2);
  CHECK_FALSE(back.reshard_after_forward);
  // Errors name the setting.
  DataParallelOptions bad;
  CHECK(ApplyEngineOptions("bucket_size=1", bad)
            .error()
            .message.find("unknown engine option "
                          "'bucket_size'") == 0);
  CHECK(ApplyEngineOptions("bucket_cap_mb=0", bad).error().message.find("at least 1") !=
        std::string::npos);
  CHECK(ApplyEngineOptions("reduce_bucket_size=1e5", bad).error().message.find("whole number") !=
        std::string::npos);
  CHECK(ApplyEngineOptions("bucket_cap_mb=9223372036854775807", bad)
            .error()
            .message.find("too large") != std::string::npos);
  CHECK_FALSE(ApplyEngineOptions("reshard_after_forward", bad).ok());
  CHECK(ApplyEngineOptions("auto_wrap_policy=modules", bad).error().message ==
        "engine option auto_wrap_policy must be transformer or size, got 'modules'");
  DataParallelOptions wrap;
  REQUIRE(ApplyEngineOptions("auto_wrap_policy=transformer", wrap).ok());
  CHECK(wrap.fsdp_wrap_blocks);
  CHECK(EngineOptionsToJson(wrap).dump() == R"({"auto_wrap_policy":"transformer"})");
  CHECK_FALSE(EngineOptionsFromJson(nlohmann::json::parse(R"({"prefetch_units": -1})"), bad).ok());
}

TEST_CASE("FSDP transformer wrap: a unit per block, the rest in the root unit", "[parallel]") {
  // x[batch,16] -> embed (W0 16x16) -> blocks.0 (W1 16x16) -> blocks.1 (W2 16x16) -> head (W3
  // 16x4), node names in the exporter's scope form.
  TestGraph t;
  ValueId h = t.Input("x", {t.B(), 16});
  const char* names[] = {"/embed/MatMul", "/blocks/blocks.0/MatMul", "/blocks/blocks.1/MatMul",
                         "/head/MatMul"};
  for (int i = 0; i < 4; ++i) {
    const int64_t out = i == 3 ? 4 : 16;
    ValueId w = t.Param("W" + std::to_string(i), {16, out});
    h = t.Op("MatMul", names[i], {h, w}, "h" + std::to_string(i), {t.B(), out});
  }
  t.Output(h);
  DataParallelOptions dp = Group(ParallelStrategy::kFsdp);
  dp.prefetch_units = 0;
  auto gathers = [&](bool blocks, const char* phase) {
    dp.fsdp_wrap_blocks = blocks;
    const TrainingProgram program = DeriveVerified(t.graph, Fp32Sgd(dp));
    std::vector<int64_t> payloads;
    for (const Step& s : program.steps)
      if (s.kind == StepKind::kCollective && s.collective.kind == CollectiveKind::kAllGather &&
          s.name.find(phase) != std::string::npos)
        payloads.push_back(s.collective.payload_bytes);
    return payloads;
  };
  auto forward_gathers = [&](bool blocks) { return gathers(blocks, "(forward)"); };
  // Size wrap with min_num_params 1: one unit per weight, 1024 bytes each, the head 256.
  CHECK(forward_gathers(false) == std::vector<int64_t>{1024, 1024, 1024, 256});
  // Transformer wrap: the root unit (W0 and W3: 1024 + 256 = 1280 bytes) is gathered first, for
  // the embedding, and stays gathered until the head; then one unit per block.
  CHECK(forward_gathers(true) == std::vector<int64_t>{1280, 1024, 1024});
  // Backward gathers the blocks again, last first; the root unit is FSDP2's root, which stays
  // gathered from forward through backward (fully_shard sets its reshard_after_forward False).
  CHECK(gathers(false, "(backward)") == std::vector<int64_t>{256, 1024, 1024, 1024});
  CHECK(gathers(true, "(backward)") == std::vector<int64_t>{1024, 1024});
  // Without blocks there is nothing to wrap.
  DataParallelOptions plain = Group(ParallelStrategy::kFsdp);
  plain.fsdp_wrap_blocks = true;
  auto refused = DeriveTrainingProgram(TwoLayerMlp().graph, Fp32Sgd(plain));
  REQUIRE_FALSE(refused.ok());
  CHECK(refused.error().message.find("no block to wrap") != std::string::npos);
}

TEST_CASE("ZeRO-3 gathers each module before it runs, forward and backward", "[parallel]") {
  const TestGraph t = TwoLayerMlp();
  const TrainingProgram program = DeriveVerified(t.graph, Fp32Sgd(Group(ParallelStrategy::kZero3)));
  // Two modules (mm1 reads W1, mm2 reads W2), each gathered for forward and again for backward
  // (ZeRO-3 reshards after forward); the integrity check (DeriveVerified) proves nothing reads a
  // parameter outside its gathered span.
  int gathers = 0;
  for (const Step& s : program.steps)
    if (s.kind == StepKind::kCollective && s.collective.kind == CollectiveKind::kAllGather)
      ++gathers;
  CHECK(gathers == 4);
  CHECK(program.data_parallel_ranks == kRanks);
  CHECK(program.data_parallel_strategy == "zero3");
}

// Parameter-category bytes live at the Begin of the first micro-batch's step named `name`.
int64_t ParameterBytesAt(const TrainingProgram& program, const SimulationResult& sim,
                         const std::string& name) {
  for (const TimelinePoint& point : sim.timeline)
    if (point.at.micro_batch == 0 && program.step(point.at.step).name == name)
      return point.by_category[MemoryCategory::kParameters];
  FAIL("no step " << name);
  return -1;
}

TEST_CASE("FSDP all-gather peaks: the unit computing plus the one prefetched", "[parallel]") {
  const TestGraph t = TwoLayerMlp();
  // fp32: W1 = 8192 * 4 = 32768 bytes, W2 = 4096 * 4 = 16384; shards of both on 4 ranks:
  // (8192 + 4096) / 4 * 4 = 12288 bytes, always live.
  DataParallelOptions dp = Group(ParallelStrategy::kFsdp);
  SECTION("prefetch 1 (default): at mm1's forward W1 and the prefetched W2 are gathered") {
    const TrainingProgram program = DeriveVerified(t.graph, Fp32Sgd(dp));
    const SimulationResult sim = Run(t, program);
    // 12288 + 32768 + 16384 = 61440.
    CHECK(ParameterBytesAt(program, sim, "mm1") == 61440);
  }
  SECTION("prefetch 0: only the unit computing") {
    dp.prefetch_units = 0;
    const TrainingProgram program = DeriveVerified(t.graph, Fp32Sgd(dp));
    const SimulationResult sim = Run(t, program);
    // 12288 + 32768 = 45056 at mm1; W1 is freed after its forward (reshard_after_forward), so
    // at mm2 12288 + 16384 = 28672.
    CHECK(ParameterBytesAt(program, sim, "mm1") == 45056);
    CHECK(ParameterBytesAt(program, sim, "mm2") == 28672);
  }
}

TEST_CASE("ring collective cost", "[parallel]") {
  CollectiveCostOptions options;
  options.intra_node = *FindInterconnect("nvlink3");  // 300e9 B/s per direction, 5 us per hop
  options.bus_efficiency = 0.8;                       // 240e9 B/s
  // All-reduce of 1e9 bytes on 8 ranks: 2 * 7/8 * 1e9 / 240e9 = 7.291667e-3 s, plus 2 * 7 hops
  // of 5e-6 s = 7e-5 s: 7.361667e-3 s.
  CHECK(CollectiveSeconds(CollectiveKind::kAllReduce, 1'000'000'000, 8, options) ==
        Approx(7.361667e-3).epsilon(1e-6));
  // All-gather: half the traffic and the hops: 3.645833e-3 + 3.5e-5 = 3.680833e-3 s.
  CHECK(CollectiveSeconds(CollectiveKind::kAllGather, 1'000'000'000, 8, options) ==
        Approx(3.680833e-3).epsilon(1e-6));
  // Across two nodes the ring runs at the network's rate: ib-hdr 25e9 * 0.8 = 20e9 B/s, 10 us
  // hops: 2 * 7/8 * 1e9 / 20e9 + 14 * 1e-5 = 0.0875 + 0.00014 = 0.08764 s.
  options.inter_node = *FindInterconnect("ib-hdr");
  options.nodes = 2;
  CHECK(CollectiveSeconds(CollectiveKind::kAllReduce, 1'000'000'000, 8, options) ==
        Approx(0.08764).epsilon(1e-6));
  CHECK(CollectiveSeconds(CollectiveKind::kAllReduce, 1'000'000'000, 1, options) == 0);
}

// hybrid-shard on 16 GPUs on 2 nodes: fsdp within each node of G = 8 GPUs, replicated.
DataParallelOptions HybridGroup(int64_t ranks, int64_t nodes) {
  DataParallelOptions dp = Group(ParallelStrategy::kHybridShard);
  dp.ranks = ranks;
  dp.nodes = nodes;
  return dp;
}

TEST_CASE("hybrid-shard shards within a node: N replaced by the GPUs per node", "[parallel]") {
  const TestGraph t = TwoLayerMlp();
  ProgramOptions options = MixedAdam(ParallelStrategy::kHybridShard);
  options.data_parallel = HybridGroup(16, 2);
  const ModelStateBytes s = StatesOf(t, options);
  // G = 16 / 2 = 8 (both matrices divide by 8 exactly). fp16 parameters and gradients 2 Psi / 8
  // = 3072 each; fp32 masters 4 Psi / 8 = 6144 and moments 8 Psi / 8 = 12288, i.e. Adam's fp32
  // state K Psi = 12 Psi costs 12 Psi / 8 = 18432 per rank, not 12 Psi / 16 = 9216.
  CHECK(s.parameters == 3072);
  CHECK(s.gradients == 3072);
  CHECK(s.master_weights + s.optimizer_state == 12 * kPsi / 8);
  CHECK(s.total() == 16 * kPsi / 8);
  // fsdp on the same 16 GPUs shards 16 ways: half of it.
  ProgramOptions fsdp = MixedAdam(ParallelStrategy::kFsdp);
  fsdp.data_parallel->ranks = 16;
  fsdp.data_parallel->nodes = 2;
  CHECK(StatesOf(t, fsdp).total() == 16 * kPsi / 16);
}

TEST_CASE("hybrid-shard collectives: gathers within the node, shards all-reduced across nodes",
          "[parallel]") {
  const TestGraph t = TwoLayerMlp();
  // fp32 SGD, one unit per parameter (fsdp_min_unit_parameters = 1): W1 32768 bytes, W2 16384.
  struct Seen {
    int within_gathers = 0;
    int within_reduce_scatters = 0;
    std::vector<int64_t> across_all_reduces;  // payloads
  };
  auto collectives = [&](int64_t ranks, int64_t nodes) {
    const TrainingProgram program = DeriveVerified(t.graph, Fp32Sgd(HybridGroup(ranks, nodes)));
    Seen seen;
    for (const Step& step : program.steps) {
      if (step.kind != StepKind::kCollective) continue;
      const Collective& c = step.collective;
      if (c.group == CollectiveGroup::kWithinNode && c.kind == CollectiveKind::kAllGather)
        ++seen.within_gathers;
      if (c.group == CollectiveGroup::kWithinNode && c.kind == CollectiveKind::kReduceScatter)
        ++seen.within_reduce_scatters;
      if (c.group == CollectiveGroup::kAcrossNodes) {
        CHECK(c.kind == CollectiveKind::kAllReduce);
        seen.across_all_reduces.push_back(c.payload_bytes);
      }
      CHECK(c.group != CollectiveGroup::kAllRanks);
    }
    std::sort(seen.across_all_reduces.begin(), seen.across_all_reduces.end());
    return seen;
  };
  SECTION("2 nodes of 8: each unit's gradient shard (bytes / 8) crosses the network once") {
    const Seen seen = collectives(16, 2);
    // Two units, each gathered for forward and again for backward, as ZeRO-3's two modules
    // above (reshard after forward), all within the node.
    CHECK(seen.within_gathers == 4);
    CHECK(seen.within_reduce_scatters == 2);
    // W2: 16384 / 8 = 2048; W1: 32768 / 8 = 4096.
    CHECK(seen.across_all_reduces == std::vector<int64_t>{2048, 4096});
  }
  SECTION("one node: no replica, no all-reduce (the fsdp program)") {
    const Seen seen = collectives(8, 1);
    CHECK(seen.within_reduce_scatters == 2);
    CHECK(seen.across_all_reduces.empty());
  }
}

TEST_CASE("collective cost per group: intra-node rings and the inter-node all-reduce",
          "[parallel]") {
  CollectiveCostOptions options;
  options.intra_node = *FindInterconnect("nvlink3");  // 300e9 x 0.8 = 240e9 B/s, 5 us per hop
  options.inter_node = *FindInterconnect("ib-hdr");   // 25e9 x 0.8 = 20e9 B/s, 10 us per hop
  options.nodes = 2;
  Collective c;
  c.kind = CollectiveKind::kAllGather;
  c.payload_bytes = 1'000'000'000;
  c.group = CollectiveGroup::kWithinNode;
  // 16 ranks on 2 nodes: the 8 of a node on NVLink, 7/8 x 1e9 / 240e9 + 7 x 5e-6 = 3.645833e-3
  // + 3.5e-5 = 3.680833e-3 s (the one-node 8-rank figure above).
  CHECK(CollectiveSeconds(c, 16, options) == Approx(3.680833e-3).epsilon(1e-6));
  // The same gather over all 16 ranks crosses InfiniBand: 15/16 x 1e9 / 20e9 + 15 x 1e-5 =
  // 0.046875 + 0.00015 = 0.047025 s.
  c.group = CollectiveGroup::kAllRanks;
  CHECK(CollectiveSeconds(c, 16, options) == Approx(0.047025).epsilon(1e-6));
  // The shard (1e9 / 8 = 1.25e8 bytes) all-reduced between the 2 nodes: 2 x 1/2 x 1.25e8 / 20e9
  // + 2 x 1 x 1e-5 = 6.25e-3 + 2e-5 = 6.27e-3 s.
  c.kind = CollectiveKind::kAllReduce;
  c.payload_bytes = 125'000'000;
  c.group = CollectiveGroup::kAcrossNodes;
  CHECK(CollectiveSeconds(c, 16, options) == Approx(6.27e-3).epsilon(1e-6));
  // One node: nobody to all-reduce with.
  options.nodes = 1;
  CHECK(CollectiveSeconds(c, 8, options) == 0);
}

TEST_CASE("the global batch is micro-batch x accumulation x GPUs, exactly", "[parallel]") {
  const TestGraph t = TwoLayerMlp();
  PlannerOptions options;
  options.gpu = *ResolveGpu("A100-80GB");
  options.program = Fp32Sgd(Group(ParallelStrategy::kZero2));
  options.global_batch = 24;  // 24 / 4 ranks = 6 samples per rank, m = 6 fits an 80 GB GPU
  auto plan = PlanTraining(t.graph, options);
  REQUIRE(plan.ok());
  CHECK(plan->chosen.micro_batch == 6);
  CHECK(plan->chosen.accumulation_steps == 1);
  CHECK(plan->chosen.global_batch == 24);
  CHECK(plan->global_batch_exact);
  CHECK(plan->time.communication_total_seconds > 0);
  // 10 samples cannot be split over 4 ranks: no m, k reach it.
  options.global_batch = 10;
  auto unreachable = PlanTraining(t.graph, options);
  REQUIRE_FALSE(unreachable.ok());
  CHECK(unreachable.error().message.find("not reachable on 4 GPUs") != std::string::npos);
}

TEST_CASE("a model without trainable parameters cannot be data parallel", "[parallel]") {
  TestGraph t;
  ValueId x = t.Input("x", {t.B(), 4});
  t.Output(t.Op("Relu", "relu", {x}, "r", {t.B(), 4}));
  auto program = DeriveTrainingProgram(t.graph, Fp32Sgd(Group(ParallelStrategy::kDdp)));
  REQUIRE_FALSE(program.ok());
  CHECK(program.error().message.find("no trainable parameters") != std::string::npos);
}

TEST_CASE("the data-parallel flags round-trip in configurations and baselines", "[parallel]") {
  const nlohmann::json json =
      nlohmann::json::parse(R"({"gpus": 8, "parallel": "zero2", "nodes": 2})");
  Expected<PlanFlags> flags = PlanFlagsFromJson(json, "");
  REQUIRE(flags.ok());
  CHECK(flags->gpus == 8);
  CHECK(flags->parallel == "zero2");
  CHECK(nlohmann::json(PlanFlagsToJson(*flags)) == json);
  CHECK(PlanFlagsAsArguments(*flags) == "--gpus 8 --parallel zero2 --nodes 2");
  CHECK_FALSE(PlanFlagsFromJson(nlohmann::json::parse(R"({"gpus": 0})"), "").ok());
}

}  // namespace
}  // namespace memplan::testing
