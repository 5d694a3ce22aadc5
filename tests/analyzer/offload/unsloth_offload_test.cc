// --offload activations --offload-hooks unsloth (analyzer/derivation/saved_tensor_offload.h):
// Unsloth's offloaded gradient checkpointing (unsloth_zoo/gradient_checkpointing.py,
// UnslothCheckpointFunction) under reentrant module recompute. Every expected byte count is
// derived in the comment above it from that source.

#include <catch2/catch.hpp>

#include <string>
#include <vector>

#include "analyzer/simulation/simulator.h"
#include "tests/analyzer/derivation/program_test_derive.h"
#include "tests/analyzer/derivation/program_test_graphs.h"

namespace memplan::testing {
namespace {

constexpr int64_t kWidth = 1024 * 1024;  // elements per row of the hidden states

// x[B, kWidth] -> Mul w (the stem) = h0 -> block k (Relu, then the residual Add) = h(k+1),
// k = 0, 1, 2 -> head Mul v = y (summed by the loss). Each block is one checkpointed module.
struct Blocks {
  TestGraph t;
  std::vector<std::vector<NodeId>> modules;
};

Blocks ThreeBlocks(int64_t batch, DType dtype = DType::kFloat32) {
  Blocks b;
  TestGraph& t = b.t;
  ValueId h = t.Op("Mul", "/stem/Mul",
                   {t.Input("x", {batch, kWidth}, dtype), t.Param("w", {1, kWidth}, dtype)}, "h0",
                   {batch, kWidth}, dtype);
  for (int k = 0; k < 3; ++k) {
    const std::string scope = "/layers." + std::to_string(k) + "/";
    const std::string K = std::to_string(k);
    ValueId p = t.Op("Relu", scope + "Relu", {h}, "p" + K, {batch, kWidth}, dtype);
    h = t.Op("Add", scope + "Add", {p, h}, "h" + std::to_string(k + 1), {batch, kWidth}, dtype);
    b.modules.push_back({t.NodeNamed(scope + "Relu"), t.NodeNamed(scope + "Add")});
  }
  t.Output(
      t.Op("Mul", "/head/Mul", {h, t.Param("v", {1, kWidth}, dtype)}, "y", {batch, kWidth}, dtype));
  return b;
}

ProgramOptions Reentrant(const Blocks& b, OffloadMode mode) {
  ProgramOptions options = SumLossSgd();
  options.recompute_modules = b.modules;
  options.recompute_reentrant = true;
  options.offload.mode = mode;
  options.offload.hooks = OffloadHooks::kUnsloth;
  return options;
}

TEST_CASE("unsloth moves each layer's input over 2 MiB stored, but the last layer's", "[offload]") {
  // Batch 2: each h_k is 2 x 1,048,576 fp32 = 8 MiB, stored as bfloat16: 4,194,304 B > 2 MiB.
  // Layers 0 and 1 move h0 and h1; layer 2, the last, keeps h2 (LAST_GC_INDEX). The stem's and
  // the head's saves reach no hook. Host: 2 x 4,194,304 = 8,388,608 B.
  const Blocks b2 = ThreeBlocks(2);
  const TrainingProgram unsloth =
      DeriveVerified(b2.t.graph, Reentrant(b2, OffloadMode::kActivations));
  const TrainingProgram plain = DeriveVerified(b2.t.graph, Reentrant(b2, OffloadMode::kNone));
  const SimulationResult unsloth_sim = SimulateExactly(unsloth, b2.t.Bind(2));
  const SimulationResult plain_sim = SimulateExactly(plain, b2.t.Bind(2));
  CHECK(unsloth_sim.host_saved_activation_bytes == 2 * 4194304);
  // GPU_BUFFERS and GPU_BUFFERS_B, each the stored size (4,194,304 B), stay resident: after the
  // step the GPU holds 8,388,608 B more than plain reentrant checkpointing.
  CHECK(unsloth_sim.persistent_bytes - plain_sim.persistent_bytes == 2 * 4194304);

  // Batch 1: 1,048,576 elements stored as bfloat16 are exactly 2 MiB, not over MINIMUM_SIZE:
  // nothing moves, no staging buffer is made, the step is plain reentrant checkpointing.
  const Blocks b1 = ThreeBlocks(1);
  const SimulationResult one = SimulateExactly(
      DeriveVerified(b1.t.graph, Reentrant(b1, OffloadMode::kActivations)), b1.t.Bind(1));
  const SimulationResult one_plain =
      SimulateExactly(DeriveVerified(b1.t.graph, Reentrant(b1, OffloadMode::kNone)), b1.t.Bind(1));
  CHECK(one.host_saved_activation_bytes == 0);
  CHECK(one.peak_bytes == one_plain.peak_bytes);
}

// The GPU copies the re-runs read that are not the staging buffers (buffer.to(float32)).
int CountUnpackedCopies(const TrainingProgram& program) {
  int n = 0;
  for (const Buffer& b : program.buffers)
    if (b.name.find("@unpacked(") != std::string::npos) ++n;
  return n;
}

TEST_CASE("unsloth re-runs read the staging buffer unless fp32 was stored as bf16", "[offload]") {
  // fp32: layers 0 and 1 each read back buffer.to(float32), a GPU tensor of their own: 2 copies.
  const Blocks fp32 = ThreeBlocks(2);
  CHECK(CountUnpackedCopies(
            DeriveVerified(fp32.t.graph, Reentrant(fp32, OffloadMode::kActivations))) == 2);
  // bf16: stored as it is (2 x 1,048,576 x 2 = 4,194,304 B > 2 MiB: moves); the re-run reads
  // buffer.detach(), the staging buffer itself: no copy. Host 2 x 4,194,304; the staging
  // buffers 2 x 4,194,304 resident.
  const Blocks bf16 = ThreeBlocks(2, DType::kBFloat16);
  const TrainingProgram program =
      DeriveVerified(bf16.t.graph, Reentrant(bf16, OffloadMode::kActivations));
  CHECK(CountUnpackedCopies(program) == 0);
  const SimulationResult sim = SimulateExactly(program, bf16.t.Bind(2));
  CHECK(sim.host_saved_activation_bytes == 2 * 4194304);
  const SimulationResult plain = SimulateExactly(
      DeriveVerified(bf16.t.graph, Reentrant(bf16, OffloadMode::kNone)), bf16.t.Bind(2));
  CHECK(sim.persistent_bytes - plain.persistent_bytes == 2 * 4194304);
}

TEST_CASE("unsloth is refused without reentrant module recompute", "[offload]") {
  const Blocks b = ThreeBlocks(2);
  ProgramOptions options = Reentrant(b, OffloadMode::kActivations);
  options.recompute_reentrant = false;  // UnslothCheckpointFunction is reentrant only
  auto program = DeriveTrainingProgram(b.t.graph, options);
  REQUIRE_FALSE(program.ok());
  CHECK(program.error().message.find("plan it with --recompute none") != std::string::npos);
}

}  // namespace
}  // namespace memplan::testing
