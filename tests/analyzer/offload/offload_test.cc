// --offload (analyzer/derivation/host_offload.h, saved_tensor_offload.h, offload/offload_cost.h):
// what moves to pinned host memory, what stays on the GPU, the copies and their time. Every
// expected byte count is derived in the comment above it.

#include <catch2/catch.hpp>

#include <algorithm>
#include <string>

#include "analyzer/cost/interconnect.h"
#include "analyzer/cost/offload_cost.h"
#include "analyzer/planning/planner.h"
#include "analyzer/precision/model_state_bytes.h"
#include "analyzer/program/step_phase.h"
#include "analyzer/simulation/simulator.h"
#include "tests/analyzer/derivation/program_test_derive.h"
#include "tests/analyzer/derivation/program_test_graphs.h"

namespace memplan::testing {
namespace {

// Adam (two fp32 moments: 8 bytes per parameter), sum loss (saves nothing).
ProgramOptions Adam(Precision precision, OffloadMode offload) {
  ProgramOptions options;
  options.loss = LossKind::kSum;
  options.optimizer = OptimizerKind::kAdam;
  options.precision = precision;
  options.amp_mode = AmpMode::kMasterWeights;
  options.offload.mode = offload;
  return options;
}

SimulationResult Run(const TestGraph& t, const TrainingProgram& program, int64_t batch = 2) {
  return SimulateExactly(program, t.Bind(batch));
}

// The largest bytes of `category` on the GPU at any step of the run.
int64_t MaxOnGpu(const SimulationResult& sim, MemoryCategory category) {
  int64_t most = 0;
  for (const TimelinePoint& point : sim.timeline)
    most = std::max(most, point.by_category[category]);
  return most;
}

// Bytes every transfer step moves (its device-side buffers), by direction, over one run of the
// body and the optimizer phase.
struct Moved {
  int64_t body = 0;
  int64_t optimizer = 0;
  int steps = 0;
};
Moved TransferredBytes(const TrainingProgram& program, const SimulationResult& sim) {
  Moved moved;
  for (LogicalTime t = 0; t < static_cast<LogicalTime>(program.steps.size()); ++t) {
    const Step& s = program.step(t);
    if (s.kind != StepKind::kTransfer) continue;
    ++moved.steps;
    const auto& device = s.transfer.direction == TransferDirection::kToHost ? s.inputs : s.outputs;
    int64_t bytes = 0;
    for (BufferId b : device) {
      CHECK_FALSE(program.buffer(b).on_host());
      bytes += sim.buffer_bytes[b.index()];
    }
    (program.micro_batch.contains(t) ? moved.body : moved.optimizer) += bytes;
  }
  return moved;
}

TEST_CASE(
    "offload: --offload optimizer, fp32 Adam: state, a parameter twin and gradients on the host",
    "[offload]") {
  const TestGraph t = TwoLayerMlp();
  const TrainingProgram on_gpu =
      DeriveVerified(t.graph, Adam(Precision::kFp32, OffloadMode::kNone));
  const TrainingProgram offloaded =
      DeriveVerified(t.graph, Adam(Precision::kFp32, OffloadMode::kOptimizer));
  const SimulationResult gpu_sim = Run(t, on_gpu);
  const SimulationResult sim = Run(t, offloaded);
  // Without offload the GPU holds Adam's 8 bytes per parameter: 8 * 12288 = 98304.
  CHECK(ModelStateBytesOf(on_gpu, gpu_sim.buffer_bytes).optimizer_state == 8 * kPsi);
  CHECK(MaxOnGpu(gpu_sim, MemoryCategory::kOptimizerState) == 8 * kPsi);
  CHECK(gpu_sim.host_peak_bytes == 0);
  // With it, exactly those 98304 bytes are on the host and none on the GPU, ever.
  CHECK(MaxOnGpu(sim, MemoryCategory::kOptimizerState) == 0);
  CHECK(sim.host_peak_breakdown[MemoryCategory::kOptimizerState] == 8 * kPsi);
  // The CPU Adam updates an fp32 twin of the parameters (4 Psi = 49152) from an fp32 host
  // gradient (4 Psi = 49152): host 16 Psi = 196608, DeepSpeed's cpu_offload estimate.
  CHECK(sim.host_peak_breakdown[MemoryCategory::kParameters] == 4 * kPsi);
  CHECK(sim.host_peak_breakdown[MemoryCategory::kGradients] == 4 * kPsi);
  CHECK(sim.host_peak_bytes == 16 * kPsi);
  CHECK(sim.host_peak_bytes == 196608);
  // After the run the GPU keeps the fp32 parameters only (set_to_none freed the gradients);
  // the host keeps everything it peaked at.
  CHECK(sim.persistent_bytes == 4 * kPsi);
  CHECK(gpu_sim.persistent_bytes == 4 * kPsi + 8 * kPsi);
  CHECK(sim.host_persistent_bytes == 196608);
  // Per step: the fp32 gradients down (49152) and the updated parameters up (49152), both in
  // the optimizer phase, whatever k is.
  const Moved moved = TransferredBytes(offloaded, sim);
  CHECK(moved.body == 0);
  CHECK(moved.optimizer == 2 * 4 * kPsi);
  CHECK(moved.steps == 2);
  CHECK(offloaded.offload == OffloadMode::kOptimizer);
}

TEST_CASE("offload: --offload optimizer with master weights: DeepSpeed ZeRO-Offload's 2 + 2 and 16",
          "[offload]") {
  // bf16 (no loss scaler, so no scalars on the GPU) with fp32 masters and Adam.
  const TestGraph t = TwoLayerMlp();
  const TrainingProgram program =
      DeriveVerified(t.graph, Adam(Precision::kBf16, OffloadMode::kOptimizer));
  const SimulationResult sim = Run(t, program);
  // GPU after the run: the bf16 working copies, 2 Psi = 24576 (gradients freed by set_to_none;
  // during backward they add 2 Psi). The masters moved: they are the copy the CPU updates.
  CHECK(sim.persistent_bytes == 2 * kPsi);
  CHECK(MaxOnGpu(sim, MemoryCategory::kOptimizerState) == 0);
  CHECK(MaxOnGpu(sim, MemoryCategory::kGradients) == 2 * kPsi);
  // Host: fp32 masters 4 Psi + fp32 gradients 4 Psi + moments 8 Psi = 16 Psi = 196608
  // (estimate_zero2_model_states_mem_needs(cpu_offload=True): 16 Psi, before its 1.5 factor).
  CHECK(sim.host_peak_bytes == 16 * kPsi);
  for (const ParameterBuffers& pb : program.parameters) {
    CHECK(pb.host_parameter == pb.master);
    CHECK(program.buffer(pb.master).on_host());
    CHECK_FALSE(program.buffer(pb.working).on_host());
    CHECK(program.buffer(pb.host_gradient).dtype == DType::kFloat32);
  }
  // The link carries the bf16 gradients down and the bf16 working copies up: 2 * 2 Psi = 49152.
  CHECK(TransferredBytes(program, sim).optimizer == 2 * 2 * kPsi);
}

TEST_CASE(
    "offload: --offload optimizer+params: 18 bytes per parameter on the host, units on the GPU",
    "[offload]") {
  const TestGraph t = TwoLayerMlp();
  ProgramOptions options = Adam(Precision::kBf16, OffloadMode::kOptimizerAndParams);
  options.accumulation_steps = 2;
  SECTION("host: masters 4 + working copies 2 + gradients 4 + moments 8 = 18 Psi") {
    const TrainingProgram program = DeriveVerified(t.graph, options);
    const SimulationResult sim = Run(t, program);
    // 18 * 12288 = 221184: estimate_zero3_model_states_mem_needs(cpu_offload=True,
    // cpu_offload_params=True) before its 1.5 factor.
    CHECK(sim.host_peak_bytes == 18 * kPsi);
    CHECK(sim.host_peak_bytes == 221184);
    // Nothing stays on the GPU between steps.
    CHECK(sim.persistent_bytes == 0);
    // Two units (mm1 reads W1, mm2 reads W2; no module scopes), each fetched before its forward
    // and again before its backward: bf16 W1 16384 + W2 8192 = 24576 bytes each way, and each
    // bf16 gradient (24576 in all) goes down after its last accumulation: 73728 per micro-batch,
    // nothing in the optimizer phase.
    const Moved moved = TransferredBytes(program, sim);
    CHECK(moved.body == 3 * 2 * kPsi);
    CHECK(moved.optimizer == 0);
    CHECK(moved.steps == 4 + 2);
    // Each copy belongs to the phase it sits in: forward fetches to forward, the rest backward.
    for (LogicalTime at = 0; at < static_cast<LogicalTime>(program.steps.size()); ++at) {
      const Step& s = program.step(at);
      if (s.kind != StepKind::kTransfer) continue;
      const bool forward = s.transfer.overlap == TransferOverlap::kForward;
      CHECK(CoarsePhaseNameAt(program, at) == (forward ? "forward" : "backward"));
    }
  }
  SECTION("prefetch 1 (default): the unit computing and the next one") {
    const TrainingProgram program = DeriveVerified(t.graph, options);
    // Both units are on the GPU while mm1 runs: 16384 + 8192 = 24576.
    CHECK(MaxOnGpu(Run(t, program), MemoryCategory::kParameters) == 2 * kPsi);
  }
  SECTION("prefetch 0: only the largest unit, bf16 W1 = 2 * 8192 = 16384") {
    options.offload.prefetch_units = 0;
    const TrainingProgram program = DeriveVerified(t.graph, options);
    CHECK(MaxOnGpu(Run(t, program), MemoryCategory::kParameters) == 2 * 8192);
  }
}

// x[batch,4] -> MatMul(W[4,3]) -> y -> Relu -> r: MatMul saves x (for W's gradient; x needs
// none, so W is not saved) and Relu saves its output r (threshold_backward(grad, result)).
TEST_CASE(
    "offload: --offload activations: every saved tensor on the host, one op's back on the GPU",
    "[offload]") {
  const TestGraph t = LinearRelu();
  ProgramOptions options = SumLossSgd();
  const TrainingProgram kept = DeriveVerified(t.graph, options);
  options.offload.mode = OffloadMode::kActivations;
  const TrainingProgram offloaded = DeriveVerified(t.graph, options);
  const SimulationResult kept_sim = Run(t, kept);
  const SimulationResult sim = Run(t, offloaded);
  // At batch 2: x = 2 * 4 * 4 = 32 bytes, r = 2 * 3 * 4 = 24 bytes, 56 held for backward.
  CHECK(kept_sim.saved_activation_bytes == 56);
  CHECK(kept_sim.host_saved_activation_bytes == 0);
  // Offloaded: nothing saved stays on the GPU; the host holds the same 56 bytes.
  CHECK(sim.saved_activation_bytes == 0);
  CHECK(sim.host_saved_activation_bytes == 56);
  CHECK(sim.host_peak_bytes == 56);
  // On the GPU a saved tensor exists again only while its backward runs: the largest one op
  // saves, x's unpacked copy at MatMul's backward (32 bytes). (Kept on the GPU, x is the graph
  // input, counted under "other", so the activations category holds only r: 24.)
  CHECK(MaxOnGpu(kept_sim, MemoryCategory::kActivations) == 24);
  CHECK(MaxOnGpu(sim, MemoryCategory::kActivations) == 32);
  // Each byte crosses twice per micro-batch (pack, unpack): 2 * 56 = 112; nothing else moves.
  const Moved moved = TransferredBytes(offloaded, sim);
  CHECK(moved.body == 112);
  CHECK(moved.optimizer == 0);
  CHECK(moved.steps == 4);  // pack mm, pack relu, unpack relu, unpack mm
  CHECK(sim.host_persistent_bytes == 0);
}

TEST_CASE("offload: --offload activations packs a tensor once per op that saves it", "[offload]") {
  // x[batch,4] read by two MatMuls (W1, W2 [4,3]), their sum the output: both save x.
  TestGraph t;
  ValueId x = t.Input("x", {t.B(), 4});
  ValueId w1 = t.Param("W1", {4, 3});
  ValueId w2 = t.Param("W2", {4, 3});
  ValueId a = t.Op("MatMul", "mm1", {x, w1}, "a", {t.B(), 3});
  ValueId b = t.Op("MatMul", "mm2", {x, w2}, "b", {t.B(), 3});
  t.Output(t.Op("Add", "add", {a, b}, "out", {t.B(), 3}));
  ProgramOptions options = SumLossSgd();
  const SimulationResult kept = Run(t, DeriveVerified(t.graph, options));
  options.offload.mode = OffloadMode::kActivations;
  const SimulationResult offloaded = Run(t, DeriveVerified(t.graph, options));
  // On the GPU x (2 * 4 * 4 = 32 bytes) is one tensor; save_on_cpu's pack hook copies it for
  // each of the two saves: 64 bytes on the host.
  CHECK(kept.saved_activation_bytes == 32);
  CHECK(offloaded.host_saved_activation_bytes == 64);
}

TEST_CASE("offload: --offload refuses what it does not model", "[offload]") {
  const TestGraph t = TwoLayerMlp();
  SECTION("data parallelism") {
    ProgramOptions options = Adam(Precision::kFp32, OffloadMode::kOptimizer);
    options.data_parallel = DataParallelGroup(ParallelStrategy::kZero2, 2);
    auto program = DeriveTrainingProgram(t.graph, options);
    REQUIRE_FALSE(program.ok());
    CHECK(program.error().message ==
          "--offload optimizer is modelled for one GPU; with --gpus it is not planned yet");
  }
  SECTION("activations with recompute") {
    ProgramOptions options = Adam(Precision::kFp32, OffloadMode::kActivations);
    options.recompute = {t.NodeNamed("relu")};
    auto program = DeriveTrainingProgram(t.graph, options);
    REQUIRE_FALSE(program.ok());
    CHECK(program.error().message.find("plan it with --recompute none") != std::string::npos);
  }
}

TEST_CASE("the host link: the GPU's PCIe generation", "[offload]") {
  CHECK(DefaultHostLink(*ResolveGpu("H100")).name == "pcie5");
  CHECK(DefaultHostLink(*ResolveGpu("H200")).name == "pcie5");
  CHECK(DefaultHostLink(*ResolveGpu("A100-80GB")).name == "pcie4");
  CHECK(DefaultHostLink(*ResolveGpu("RTX4090")).name == "pcie4");
  CHECK(DefaultHostLink(*ResolveGpu("V100")).name == "pcie3");
  CHECK(DefaultHostLink(*ResolveGpu("T4")).name == "pcie3");
  CHECK(DefaultHostLink(*ResolveGpu("24G")).name == "pcie4");  // generic: T4 throughput, PCIe 4
  // 16 GT/s x 16 lanes x 128/130 / 8 = 31.5 GB/s; 32 GT/s: 63 GB/s.
  CHECK(FindInterconnect("pcie4")->bytes_per_second == 31.5e9);
  CHECK(FindInterconnect("pcie5")->bytes_per_second == 63e9);
  CHECK(FindInterconnect("pcie3")->bytes_per_second == 15.75e9);
}

TEST_CASE("offload time: copies over the link, what compute hides, the CPU optimizer",
          "[offload]") {
  OffloadCostOptions options;
  options.host_link = *FindInterconnect("pcie4");  // 31.5e9 B/s x 0.8 = 25.2e9 B/s, 8 us
  options.copy_efficiency = 0.8;
  options.host_memory_bytes_per_second = 100e9;
  // 25.2e9 bytes take one second plus the copy's latency.
  CHECK(TransferSeconds(25'200'000'000, options) == Approx(1.000008));
  SECTION("optimizer: gradients down hide behind backward, parameters up do not") {
    const TestGraph t = TwoLayerMlp();
    const TrainingProgram program =
        DeriveVerified(t.graph, Adam(Precision::kFp32, OffloadMode::kOptimizer));
    const SimulationResult sim = Run(t, program);
    // One copy of 49152 bytes: 49152 / 25.2e9 = 1.950476e-6 s + 8e-6 s = 9.950476e-6 s.
    const double copy = 49152 / 25.2e9 + 8e-6;
    StepTimeEstimate compute;
    compute.backward_seconds = 1.0;  // plenty to hide the gradient copy
    OffloadEstimate e = EstimateOffload(program, sim.buffer_bytes, 3, compute, options);
    CHECK(e.transfer_bytes == 98304);  // once per step, whatever k
    CHECK(e.transfer_seconds == Approx(2 * copy));
    CHECK(e.exposed_transfer_seconds == Approx(copy));
    // CPU Adam streams 2 x twin (49152) + gradient (49152) + 2 x moments (98304) = 344064 bytes
    // at 100e9 B/s: 3.44064e-6 s.
    CHECK(e.host_optimizer_bytes == 344064);
    CHECK(e.host_optimizer_seconds == Approx(3.44064e-6));
    compute.backward_seconds = 0;  // nothing to hide behind
    e = EstimateOffload(program, sim.buffer_bytes, 3, compute, options);
    CHECK(e.exposed_transfer_seconds == Approx(2 * copy));
  }
  SECTION("activations: four waited copies per micro-batch, k micro-batches") {
    const TestGraph t = LinearRelu();
    ProgramOptions o = SumLossSgd();
    o.offload.mode = OffloadMode::kActivations;
    const TrainingProgram program = DeriveVerified(t.graph, o);
    const SimulationResult sim = Run(t, program);
    StepTimeEstimate compute;
    compute.forward_seconds = compute.backward_seconds = 1.0;  // hides nothing: save_on_cpu waits
    const OffloadEstimate e = EstimateOffload(program, sim.buffer_bytes, 2, compute, options);
    // 2 micro-batches x (112 bytes + 4 copies' latency): 2 * (112 / 25.2e9 + 4 * 8e-6).
    CHECK(e.transfer_bytes == 224);
    CHECK(e.exposed_transfer_seconds == Approx(2 * (112 / 25.2e9 + 4 * 8e-6)));
    CHECK(e.host_optimizer_seconds == 0);
  }
}

TEST_CASE("the planner adds the offload time and frees what moved for a larger micro-batch",
          "[offload]") {
  const TestGraph t = TwoLayerMlp();
  PlannerOptions options;
  options.gpu = *ResolveGpu("A100-80GB");
  options.program = Adam(Precision::kFp32, OffloadMode::kNone);
  options.micro_batch = 4;
  options.allocator = AllocatorKind::kExact;  // live bytes: no 2 MiB segment rounding
  auto plain = PlanTraining(t.graph, options);
  options.program.offload.mode = OffloadMode::kOptimizer;
  auto offloaded = PlanTraining(t.graph, options);
  REQUIRE(plain.ok());
  REQUIRE(offloaded.ok());
  // The GPU optimizer step is gone; the CPU one and the exposed copy (the parameters up) are in.
  CHECK(plain->time.optimizer_seconds > 0);
  CHECK(offloaded->time.optimizer_seconds == 0);
  CHECK(offloaded->time.host_optimizer_seconds > 0);
  CHECK(offloaded->time.transfer_bytes == 98304);
  CHECK(offloaded->time.step_seconds ==
        Approx(offloaded->time.forward_seconds + offloaded->time.backward_seconds +
               offloaded->time.transfer_seconds + offloaded->time.host_optimizer_seconds));
  CHECK(offloaded->simulation.host_peak_bytes == 16 * kPsi);
  // The second step's backward no longer holds Adam's moments (8 Psi = 98304) on the GPU.
  CHECK(plain->chosen.peak_bytes - offloaded->chosen.peak_bytes >= 8 * kPsi);
}

}  // namespace
}  // namespace memplan::testing
