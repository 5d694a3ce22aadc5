// --offload activations --offload-hooks torchtune / torchtune-streams
// (analyzer/derivation/saved_tensor_offload.h): torchtune's OffloadActivations as the recipes
// run it. Every expected byte count is derived in the comment above it from
// torchtune/training/_activation_offloading.py.

#include <catch2/catch.hpp>

#include <string>
#include <vector>

#include "analyzer/simulation/simulator.h"
#include "tests/analyzer/derivation/program_test_derive.h"
#include "tests/analyzer/derivation/program_test_graphs.h"

namespace memplan::testing {
namespace {

ProgramOptions Offloaded(OffloadHooks hooks) {
  ProgramOptions options = SumLossSgd();
  options.offload.mode = OffloadMode::kActivations;
  options.offload.hooks = hooks;
  return options;
}

// Live GPU bytes right after the step named `name` begins.
int64_t LiveAt(const TrainingProgram& program, const SimulationResult& sim,
               const std::string& name) {
  for (const TimelinePoint& point : sim.timeline) {
    if (point.at.step < 0 || point.at.iteration != 0) continue;
    if (program.step(point.at.step).name == name) return point.live_bytes;
  }
  FAIL("no step named " << name);
  return -1;
}

// The graphs have constant shapes: the 1024-byte threshold is decided when the program is
// derived, and a size that depends on the batch or a --dim symbol counts as large
// (saved_tensor_offload.h). A MatMul whose input needs no gradient saves only that input.

TEST_CASE("torchtune hooks move saves of >= 1024 bytes that are not an nn.Parameter", "[offload]") {
  // x[B,128] -> mm1 W1[128,128] = h -> Mul s (a parameter of x's shape) = z -> head W2[128,4].
  for (const int64_t batch : {2, 1}) {
    TestGraph t;
    ValueId x = t.Input("x", {batch, 128});
    ValueId h = t.Op("MatMul", "mm1", {x, t.Param("W1", {128, 128})}, "h", {batch, 128});
    ValueId z = t.Op("Mul", "mul", {h, t.Param("s", {batch, 128})}, "z", {batch, 128});
    t.Output(t.Op("MatMul", "head", {z, t.Param("W2", {128, 4})}, "y", {batch, 4}));
    const TrainingProgram save_on_cpu =
        DeriveVerified(t.graph, Offloaded(OffloadHooks::kSaveOnCpu));
    const TrainingProgram torchtune = DeriveVerified(t.graph, Offloaded(OffloadHooks::kTorchtune));
    const int64_t row = batch * 128 * 4;  // bytes of x, h, s and z
    // save_on_cpu packs mm1's x, the Mul's h and s, the head's z and W2 (128 * 4 * 4 = 2048).
    CHECK(SimulateExactly(save_on_cpu, t.Bind(batch)).host_saved_activation_bytes ==
          4 * row + 2048);
    // torchtune, batch 2: x and h (1024 bytes each: not below min_offload_size) move; s is the
    // nn.Parameter itself; the head runs under NoOpManager. 2048. Batch 1: x and h have 512
    // bytes each, under 1024: nothing moves.
    CHECK(SimulateExactly(torchtune, t.Bind(batch)).host_saved_activation_bytes ==
          (batch == 2 ? 2 * row : 0));
  }
}

TEST_CASE("torchtune hooks move a view of a parameter (linear's weight.t())", "[offload]") {
  // x[2,128] -> mm0 W0[128,128] = h -> MatMul(h, Transpose(W[4,128])) = y -> Relu (the head).
  // mm0 saves x (1024 B); mm saves h (1024 B) and the transposed view of W (128 * 4 * 4 = 2048 B),
  // which is no nn.Parameter: all three move, 4096 B.
  TestGraph t;
  ValueId x = t.Input("x", {2, 128});
  ValueId h = t.Op("MatMul", "mm0", {x, t.Param("W0", {128, 128})}, "h", {2, 128});
  ValueId wt = t.Op("Transpose", "t", {t.Param("W", {4, 128})}, "wt", {128, 4});
  ValueId y = t.Op("MatMul", "mm", {h, wt}, "y", {2, 4});
  t.Output(t.Op("Relu", "relu", {y}, "out", {2, 4}));
  const TrainingProgram torchtune = DeriveVerified(t.graph, Offloaded(OffloadHooks::kTorchtune));
  CHECK(SimulateExactly(torchtune, t.Bind(2)).host_saved_activation_bytes == 4096);
}

TEST_CASE("torchtune hooks leave the output head and the loss on the GPU", "[offload]") {
  // x[4,128] -> MatMul W1[128,64] = h -> MatMul W2[64,256] = logits -> cross entropy.
  TestGraph t;
  ValueId x = t.Input("x", {4, 128});
  ValueId h = t.Op("MatMul", "mm1", {x, t.Param("W1", {128, 64})}, "h", {4, 64});
  t.Output(t.Op("MatMul", "head", {h, t.Param("W2", {64, 256})}, "logits", {4, 256}));
  ProgramOptions options = Offloaded(OffloadHooks::kTorchtune);
  options.loss = LossKind::kCrossEntropy;
  // mm1 saves x (4*128*4 = 2048: moves). The head runs under NoOpManager (h, 4*64*4 = 1024 B,
  // and W2 stay) and the loss outside the context: 2048 B.
  CHECK(SimulateExactly(DeriveVerified(t.graph, options), t.Bind(4)).host_saved_activation_bytes ==
        2048);
  // save_on_cpu also packs h (1024), W2 (64*256*4 = 65536) and the loss's log-probabilities
  // (4*256*4 = 4096) and labels (4 int64 = 32): 2048 + 1024 + 65536 + 4096 + 32 = 72736.
  options.offload.hooks = OffloadHooks::kSaveOnCpu;
  CHECK(SimulateExactly(DeriveVerified(t.graph, options), t.Bind(4)).host_saved_activation_bytes ==
        72736);
}

TEST_CASE("torchtune-streams keeps moved tensors on the GPU until 5 packs later", "[offload]") {
  // x[1,256] -> Mul s[1,256] -> r1 = Relu -> ... -> r8 = Relu (the head). The Mul saves x (for
  // s's gradient: 1024 B, pack id 1); relu1..relu7 save their outputs (1024 B each, ids 2..8);
  // every one moves.
  TestGraph t;
  ValueId v = t.Op("Mul", "mul", {t.Input("x", {1, 256}), t.Param("s", {1, 256})}, "r0", {1, 256});
  for (int i = 1; i <= 8; ++i)
    v = t.Op("Relu", "relu" + std::to_string(i), {v}, "r" + std::to_string(i), {1, 256});
  t.Output(v);
  const TrainingProgram plain = DeriveVerified(t.graph, Offloaded(OffloadHooks::kTorchtune));
  const TrainingProgram streams =
      DeriveVerified(t.graph, Offloaded(OffloadHooks::kTorchtuneStreams));
  const SimulationResult plain_sim = SimulateExactly(plain, t.Bind(1));
  const SimulationResult streams_sim = SimulateExactly(streams, t.Bind(1));
  // The same host copies either way: x and r1..r7, 8 * 1024.
  CHECK(plain_sim.host_saved_activation_bytes == 8 * 1024);
  CHECK(streams_sim.host_saved_activation_bytes == 8 * 1024);
  // relu7's pack (id 8) frees the stashed ids <= 8 - 5 = 3 (r2, after waiting on its copy; x and
  // r1 went at ids 6 and 7), so while it runs r2..r6 are still on the GPU, where without streams
  // each was freed after the next Relu read it: 5 * 1024 more.
  CHECK(LiveAt(streams, streams_sim, "pack relu7") - LiveAt(plain, plain_sim, "pack relu7") ==
        5 * 1024);
  // At the Mul's pack nothing is stashed yet: the same bytes.
  CHECK(LiveAt(streams, streams_sim, "pack mul") == LiveAt(plain, plain_sim, "pack mul"));
}

TEST_CASE("torchtune hooks under module checkpointing move each block's input", "[offload]") {
  // x[1,256] -> Mul w (the stem: saves x, 1024 B) = h0 -> block k (Relu, then the residual Add)
  // = h(k+1), k = 0, 1 -> head MatMul W[256,4]. Checkpointed, the blocks' ops save through the
  // checkpoint's hooks; the checkpoint saves each block's input (h0, h1: 1024 B each) through
  // torchtune's; the head runs under NoOpManager. On the host: x, h0, h1 = 3072 B.
  TestGraph t;
  ValueId h =
      t.Op("Mul", "/stem/Mul", {t.Input("x", {1, 256}), t.Param("w", {1, 256})}, "h0", {1, 256});
  std::vector<std::vector<NodeId>> modules;
  for (int k = 0; k < 2; ++k) {
    const std::string scope = "/blocks." + std::to_string(k) + "/";
    const std::string K = std::to_string(k);
    ValueId p = t.Op("Relu", scope + "Relu", {h}, "p" + K, {1, 256});
    h = t.Op("Add", scope + "Add", {p, h}, "h" + std::to_string(k + 1), {1, 256});
    modules.push_back({t.NodeNamed(scope + "Relu"), t.NodeNamed(scope + "Add")});
  }
  t.Output(t.Op("MatMul", "/head/MatMul", {h, t.Param("W", {256, 4})}, "y", {1, 4}));
  for (const OffloadHooks hooks : {OffloadHooks::kTorchtune, OffloadHooks::kTorchtuneStreams}) {
    ProgramOptions options = Offloaded(hooks);
    options.recompute_modules = modules;
    CHECK(
        SimulateExactly(DeriveVerified(t.graph, options), t.Bind(1)).host_saved_activation_bytes ==
        3 * 1024);
  }
  // save_on_cpu would pack what the re-run drops: refused.
  ProgramOptions options = Offloaded(OffloadHooks::kSaveOnCpu);
  options.recompute_modules = modules;
  auto program = DeriveTrainingProgram(t.graph, options);
  REQUIRE_FALSE(program.ok());
  CHECK(program.error().message.find("plan it with --recompute none") != std::string::npos);
}

TEST_CASE("torchtune hooks refuse what they do not model", "[offload]") {
  const TestGraph t = TwoLayerMlp();
  ProgramOptions options = Offloaded(OffloadHooks::kTorchtune);
  options.recompute = {t.NodeNamed("relu")};
  auto program = DeriveTrainingProgram(t.graph, options);
  REQUIRE_FALSE(program.ok());
  CHECK(program.error().message.find("plan it with --recompute none") != std::string::npos);
}

}  // namespace
}  // namespace memplan::testing
