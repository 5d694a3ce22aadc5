// --optimizer-impl (analyzer/program/optimizer_transient.h): the intermediates torch.optim's step
// allocates inside kOptimizerStep, per implementation. Every expected byte count is derived in
// the comment above it from torch's source (torch/optim/adam.py, sgd.py, torch >= 2.1), never
// from memplan's output.

#include <catch2/catch.hpp>

#include <algorithm>
#include <string>
#include <vector>

#include "analyzer/program/optimizer_transient.h"
#include "analyzer/simulation/simulator.h"
#include "tests/analyzer/derivation/program_test_derive.h"
#include "tests/analyzer/derivation/program_test_graphs.h"

namespace memplan {
namespace {

using testing::DeriveVerified;
using testing::TestGraph;

// x[batch,16] -> MatMul(W1[16,64]) -> Relu -> MatMul(W2[64,256]) -> Relu -> MatMul(W3[256,8]).
// Parameters in order: W1 1024, W2 16384, W3 2048 elements; P = 19456. The largest is in the
// middle, so the for-loop's "previous denom" term is visible.
TestGraph ThreeLayerMlp() {
  TestGraph t;
  ValueId x = t.Input("x", {t.B(), 16});
  ValueId w1 = t.Param("W1", {16, 64});
  ValueId w2 = t.Param("W2", {64, 256});
  ValueId w3 = t.Param("W3", {256, 8});
  ValueId h1 = t.Op("MatMul", "mm1", {x, w1}, "h1", {t.B(), 64});
  ValueId r1 = t.Op("Relu", "relu1", {h1}, "r1", {t.B(), 64});
  ValueId h2 = t.Op("MatMul", "mm2", {r1, w2}, "h2", {t.B(), 256});
  ValueId r2 = t.Op("Relu", "relu2", {h2}, "r2", {t.B(), 256});
  t.Output(t.Op("MatMul", "mm3", {r2, w3}, "y", {t.B(), 8}));
  return t;
}
constexpr int64_t kP = 1024 + 16384 + 2048;  // 19456

ProgramOptions Options(OptimizerKind optimizer, OptimizerImpl impl, bool weight_decay = false) {
  ProgramOptions options;
  options.loss = LossKind::kSum;  // saves nothing
  options.optimizer = optimizer;
  options.optimizer_impl = impl;
  options.weight_decay = weight_decay;
  return options;
}

SimulationResult Run(const TestGraph& t, const TrainingProgram& program, int64_t batch = 1) {
  return testing::SimulateExactly(program, t.Bind(batch));
}

// The kOptimizerTransient buffers' total bytes and how many there are.
struct Transients {
  int64_t bytes = 0;
  int count = 0;
};
Transients TransientsOf(const TrainingProgram& program, const SimulationResult& sim) {
  Transients t;
  for (const Buffer& b : program.buffers) {
    if (b.role != BufferRole::kOptimizerTransient) continue;
    CHECK(b.category == MemoryCategory::kTransients);
    t.bytes += sim.buffer_bytes[b.id.index()];
    ++t.count;
  }
  return t;
}

// Peak of one run at batch 1, where it fell, and the live bytes at the optimizer step.
struct Peak {
  int64_t bytes = 0;
  StepKind kind = StepKind::kForward;
  int64_t transients = 0;      // kTransients bytes at the peak
  int64_t optimizer_step = 0;  // the most live bytes after any kOptimizerStep Begin
};
Peak PeakOf(const TestGraph& t, const ProgramOptions& options) {
  const TrainingProgram program = DeriveVerified(t.graph, options);
  const SimulationResult sim = Run(t, program);
  Peak peak{sim.peak_bytes, program.step(sim.peak_at.step).kind,
            sim.peak_breakdown[MemoryCategory::kTransients], 0};
  for (const TimelinePoint& point : sim.timeline)
    if (program.step(point.at.step).kind == StepKind::kOptimizerStep)
      peak.optimizer_step = std::max(peak.optimizer_step, point.live_bytes);
  return peak;
}

TEST_CASE("optimizer transients: the rules of torch's Adam and SGD, parameter by parameter",
          "[optimizer_transient]") {
  // Three fp32 parameters of 1024, 16384 and 2048 elements (4096, 65536 and 8192 bytes).
  const std::vector<OptimizerStepParameter> params = {{1024, DType::kFloat32, DType::kFloat32},
                                                      {16384, DType::kFloat32, DType::kFloat32},
                                                      {2048, DType::kFloat32, DType::kFloat32}};
  auto total = [](const std::vector<OptimizerTransient>& list) {
    int64_t bytes = 0;
    for (const OptimizerTransient& t : list) bytes += t.bytes();
    return bytes;
  };
  SECTION("foreach Adam: sqrt(exp_avg_sq) of every parameter at once, 4 B per parameter") {
    const auto list = OptimizerStepTransients(OptimizerKind::kAdam, OptimizerImpl::kForeach,
                                              /*weight_decay=*/false, params);
    REQUIRE(list.size() == 3);
    CHECK(list[1].parameter == 1);
    CHECK(list[1].name == "exp_avg_sq_sqrt");
    CHECK(list[1].elements == 16384);
    CHECK(total(list) == 4 * kP);  // 77824
  }
  SECTION("foreach Adam with weight decay: the gradient copy is deleted before the sqrt") {
    // `device_grads = torch._foreach_add(...)` (4 P) then `del device_grads` before
    // `_foreach_sqrt` (4 P): the peak is max(4 P, 4 P) = 4 P, not 8 P.
    const auto adam = OptimizerStepTransients(OptimizerKind::kAdam, OptimizerImpl::kForeach,
                                              /*weight_decay=*/true, params);
    CHECK(total(adam) == 4 * kP);
    CHECK(adam[0].name == "exp_avg_sq_sqrt");
    // AdamW's decay is `_foreach_mul_(params, 1 - lr * wd)`, in place.
    const auto adamw = OptimizerStepTransients(OptimizerKind::kAdamW, OptimizerImpl::kForeach,
                                               /*weight_decay=*/true, params);
    CHECK(total(adamw) == 4 * kP);
    // With gradients wider than the state (fp32 gradients, bf16 state) the copy is the larger.
    const std::vector<OptimizerStepParameter> wide = {{100, DType::kFloat32, DType::kBFloat16}};
    const auto copy = OptimizerStepTransients(OptimizerKind::kAdam, OptimizerImpl::kForeach,
                                              /*weight_decay=*/true, wide);
    REQUIRE(copy.size() == 1);
    CHECK(copy[0].name == "grad_with_decay");
    CHECK(copy[0].bytes() == 400);
  }
  SECTION("for-loop Adam: max over i of previous denom + sqrt + quotient") {
    // i=0: 0 + 2*1024 = 2048; i=1: 1024 + 2*16384 = 33792; i=2: 16384 + 2*2048 = 20480
    // elements. Max 33792 fp32 elements = 135168 bytes (not 2 * 16384: W1's denom is live).
    const auto list = OptimizerStepTransients(OptimizerKind::kAdam, OptimizerImpl::kForLoop,
                                              /*weight_decay=*/false, params);
    REQUIRE(list.size() == 1);
    CHECK(list[0].parameter == -1);
    CHECK(list[0].dtype == DType::kFloat32);
    CHECK(list[0].elements == 33792);
    CHECK(list[0].bytes() == 135168);
    // AdamW's decay adds nothing.
    CHECK(total(OptimizerStepTransients(OptimizerKind::kAdamW, OptimizerImpl::kForLoop,
                                        /*weight_decay=*/true, params)) == 135168);
    // Adam's `grad = grad.add(param, alpha=wd)` lives through the iteration: + g[i].
    // i=1: 1024 + 3*16384 = 50176; i=2: 16384 + 3*2048 = 22528. Max 50176 * 4 = 200704.
    CHECK(total(OptimizerStepTransients(OptimizerKind::kAdam, OptimizerImpl::kForLoop,
                                        /*weight_decay=*/true, params)) == 200704);
  }
  SECTION("SGD: nothing without weight decay; a gradient copy with it") {
    for (OptimizerKind sgd : {OptimizerKind::kSgd, OptimizerKind::kMomentum}) {
      for (OptimizerImpl impl : {OptimizerImpl::kForeach, OptimizerImpl::kForLoop})
        CHECK(OptimizerStepTransients(sgd, impl, /*weight_decay=*/false, params).empty());
      // foreach: the group's `device_grads = torch._foreach_add(...)`, 4 P bytes.
      CHECK(total(OptimizerStepTransients(sgd, OptimizerImpl::kForeach, true, params)) == 4 * kP);
      // for-loop: one parameter's copy at a time, the largest: 16384 * 4 = 65536.
      CHECK(total(OptimizerStepTransients(sgd, OptimizerImpl::kForLoop, true, params)) == 65536);
    }
  }
  SECTION("fused, and optimizers with their own kernels: nothing") {
    for (OptimizerKind kind : {OptimizerKind::kSgd, OptimizerKind::kMomentum, OptimizerKind::kAdam,
                               OptimizerKind::kAdamW})
      CHECK(OptimizerStepTransients(kind, OptimizerImpl::kFused, true, params).empty());
    for (OptimizerKind kind : {OptimizerKind::kAdamW8bit, OptimizerKind::kPagedAdamW8bit,
                               OptimizerKind::kAdafactor, OptimizerKind::kLion})
      for (OptimizerImpl impl : {OptimizerImpl::kForeach, OptimizerImpl::kForLoop})
        CHECK(OptimizerStepTransients(kind, impl, false, params).empty());
  }
}

TEST_CASE("optimizer transients: fp32 Adam's peak at the optimizer step, per implementation",
          "[optimizer_transient]") {
  const TestGraph t = ThreeLayerMlp();
  // At the optimizer step (k = 1, batch 1) the live bytes are the fp32 parameters 4 P, their
  // gradients 4 P (zero_grad frees them after the step) and Adam's two moments 8 P, created at
  // the first step's Begin: 16 P = 311296. The second iteration's backward holds the moments
  // too: at mm1's backward (the last) the parameters, all three gradients and the moments,
  // 16 P, plus grad(h1) [1, 64] = 256 bytes and the input x [1, 16] = 64 bytes: 311616.
  SECTION("fused: 16 P at the step, the peak is the second backward's 16 P + 320") {
    const Peak fused = PeakOf(t, Options(OptimizerKind::kAdam, OptimizerImpl::kFused));
    CHECK(fused.optimizer_step == 16 * kP);
    CHECK(fused.optimizer_step == 311296);
    CHECK(fused.bytes == 16 * kP + 256 + 64);
    CHECK(fused.kind == StepKind::kBackward);
  }
  SECTION("foreach: + 4 B per trainable parameter, 20 P, now the peak") {
    const Peak foreach = PeakOf(t, Options(OptimizerKind::kAdam, OptimizerImpl::kForeach));
    CHECK(foreach.optimizer_step == 20 * kP);
    CHECK(foreach.bytes == 20 * kP);
    CHECK(foreach.bytes == 389120);
    CHECK(foreach.kind == StepKind::kOptimizerStep);
    CHECK(foreach.transients == 4 * kP);
    // Weight decay (Adam's coupled copy is deleted before the sqrt) and AdamW: the same.
    CHECK(PeakOf(t, Options(OptimizerKind::kAdam, OptimizerImpl::kForeach, true)).bytes == 20 * kP);
    CHECK(PeakOf(t, Options(OptimizerKind::kAdamW, OptimizerImpl::kForeach, true)).bytes ==
          20 * kP);
  }
  SECTION("for-loop: + the one-at-a-time peak, 135168 bytes (200704 with Adam's decay)") {
    // 16 P + 135168 = 311296 + 135168 = 446464 (see the rules test for 135168).
    const Peak loop = PeakOf(t, Options(OptimizerKind::kAdam, OptimizerImpl::kForLoop));
    CHECK(loop.bytes == 446464);
    CHECK(loop.kind == StepKind::kOptimizerStep);
    CHECK(loop.transients == 135168);
    // Adam with weight decay: 311296 + 200704 = 512000; AdamW with it: 446464.
    CHECK(PeakOf(t, Options(OptimizerKind::kAdam, OptimizerImpl::kForLoop, true)).bytes == 512000);
    CHECK(PeakOf(t, Options(OptimizerKind::kAdamW, OptimizerImpl::kForLoop, true)).bytes == 446464);
  }
}

TEST_CASE("optimizer transients: frozen parameters are not stepped", "[optimizer_transient]") {
  TestGraph t = ThreeLayerMlp();
  t.graph.mutable_value(*t.graph.FindValue("W2")).frozen = true;
  // torch skips parameters whose .grad is None: the trainable W1 (1024) and W3 (2048).
  // foreach: 4 * (1024 + 2048) = 12288 bytes in two buffers.
  const TrainingProgram foreach =
      DeriveVerified(t.graph, Options(OptimizerKind::kAdam, OptimizerImpl::kForeach));
  const Transients f = TransientsOf(foreach, Run(t, foreach));
  CHECK(f.count == 2);
  CHECK(f.bytes == 12288);
  // for-loop over W1, W3: i=0: 2*1024 = 2048; i=1: 1024 + 2*2048 = 5120 elements: 20480 bytes.
  const TrainingProgram loop =
      DeriveVerified(t.graph, Options(OptimizerKind::kAdam, OptimizerImpl::kForLoop));
  const Transients l = TransientsOf(loop, Run(t, loop));
  CHECK(l.count == 1);
  CHECK(l.bytes == 20480);
}

TEST_CASE("optimizer transients: in the state's dtype, per rank, none with a CPU optimizer",
          "[optimizer_transient]") {
  const TestGraph t = ThreeLayerMlp();
  SECTION("pure bf16 keeps bf16 moments: sqrt(exp_avg_sq) is 2 B per parameter") {
    ProgramOptions options = Options(OptimizerKind::kAdamW, OptimizerImpl::kForeach);
    options.precision = Precision::kBf16;
    options.amp_mode = AmpMode::kPure;
    const TrainingProgram program = DeriveVerified(t.graph, options);
    CHECK(TransientsOf(program, Run(t, program)).bytes == 2 * kP);  // 38912
  }
  SECTION("master weights: fp32 moments, 4 B per parameter") {
    ProgramOptions options = Options(OptimizerKind::kAdamW, OptimizerImpl::kForeach);
    options.precision = Precision::kBf16;
    options.amp_mode = AmpMode::kMasterWeights;
    const TrainingProgram program = DeriveVerified(t.graph, options);
    CHECK(TransientsOf(program, Run(t, program)).bytes == 4 * kP);
  }
  SECTION("sharded state (zero1, 4 ranks): a rank's sqrt covers its shard only") {
    ProgramOptions options = Options(OptimizerKind::kAdam, OptimizerImpl::kForeach);
    options.data_parallel = testing::DataParallelGroup(ParallelStrategy::kZero1, 4);
    const TrainingProgram program = DeriveVerified(t.graph, options);
    // ceil(n / 4) per parameter: 256 + 4096 + 512 = 4864 fp32 elements = 19456 bytes = 4 P / 4.
    CHECK(TransientsOf(program, Run(t, program)).bytes == 19456);
  }
  SECTION("ddp replicates the state: the whole 4 P on every rank") {
    ProgramOptions options = Options(OptimizerKind::kAdam, OptimizerImpl::kForeach);
    options.data_parallel = testing::DataParallelGroup(ParallelStrategy::kDdp, 4);
    const TrainingProgram program = DeriveVerified(t.graph, options);
    CHECK(TransientsOf(program, Run(t, program)).bytes == 4 * kP);
  }
  SECTION("--offload optimizer: DeepSpeed's CPU Adam, no GPU transient") {
    ProgramOptions options = Options(OptimizerKind::kAdam, OptimizerImpl::kForeach);
    options.offload.mode = OffloadMode::kOptimizer;
    const TrainingProgram program = DeriveVerified(t.graph, options);
    CHECK(TransientsOf(program, Run(t, program)).count == 0);
  }
}

}  // namespace
}  // namespace memplan
