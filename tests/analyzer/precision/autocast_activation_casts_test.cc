// How torch.autocast keeps activations (analyzer/precision/amp_regime.h): every listed op casts
// the activations it reads for itself (autocast caches only leaf parameters), an op autocast does
// not list reads mixed dtypes inside its kernel (type promotion, no copy), and a gradient computed
// in another dtype than its input's is cast afterwards, both copies live while the cast runs.
//
// Batch 2, bf16 autocast, loss = sum(y), SGD. Every saved total below is also what PyTorch 1.13
// keeps under torch.autocast("cpu", dtype=torch.bfloat16) for the torch code quoted in the case
// (saved_tensors_hooks, one count per storage, parameters excluded): the CPU and CUDA autocast
// caches follow the same rule, and mm/matmul are on both lower-precision lists.

#include <catch2/catch.hpp>

#include "analyzer/derivation/program_derivation.h"
#include "analyzer/simulation/simulator.h"
#include "tests/analyzer/derivation/program_test_derive.h"
#include "tests/analyzer/derivation/program_test_graphs.h"

namespace memplan {
namespace {

using testing::TestGraph;

TrainingProgram DeriveAutocast(const TestGraph& t) {
  ProgramOptions options;
  options.loss = LossKind::kSum;
  options.optimizer = OptimizerKind::kSgd;
  options.precision = Precision::kBf16;
  options.amp_mode = AmpMode::kAutocast;
  return testing::DeriveVerified(t.graph, options);
}

SimulationResult Replay(const TestGraph& t, const TrainingProgram& program) {
  return testing::SimulateExactly(program, t.Bind(2));
}

int CastsOf(const TrainingProgram& program, const std::string& value_name) {
  int casts = 0;
  for (const Buffer& b : program.buffers)
    if (b.role == BufferRole::kCast && b.name.rfind(value_name + ".bfloat16@", 0) == 0) ++casts;
  return casts;
}

// torch: h = relu(x + b); y = h @ Wq + h @ Wk + h @ Wv   (x [2, 8] fp32, no grad)
// h is fp32 [2, 8] (Add and Relu are not listed). Each matmul casts h to bf16 for itself:
//   relu saves h                         2*8*4 = 64 B
//   each matmul saves its own bf16 h      2*8*2 = 32 B, three of them: 96 B
// 160 B of activations, plus the three bf16 weight casts (8*8*2 = 128 B each), which the matmuls
// keep for h's gradient. One shared cast of h would keep 64 B less.
TEST_CASE("autocast casts an activation once per reader, not once per forward", "[precision]") {
  TestGraph t;
  ValueId x = t.Input("x", {t.B(), 8});
  ValueId s = t.Op("Add", "add", {x, t.Param("b", {8})}, "s", {t.B(), 8});
  ValueId h = t.Op("Relu", "relu", {s}, "h", {t.B(), 8});
  ValueId q = t.Op("MatMul", "q", {h, t.Param("Wq", {8, 8})}, "q_out", {t.B(), 8});
  ValueId k = t.Op("MatMul", "k", {h, t.Param("Wk", {8, 8})}, "k_out", {t.B(), 8});
  ValueId v = t.Op("MatMul", "v", {h, t.Param("Wv", {8, 8})}, "v_out", {t.B(), 8});
  ValueId qk = t.Op("Add", "qk", {q, k}, "qk_out", {t.B(), 8});
  t.Output(t.Op("Add", "qkv", {qk, v}, "y", {t.B(), 8}));

  const TrainingProgram program = DeriveAutocast(t);
  CHECK(CastsOf(program, "h") == 3);
  const SimulationResult r = Replay(t, program);
  CHECK(r.saved_activation_bytes == 64 + 3 * 32 + 3 * 128);
}

// torch: a = x @ W1 (bf16); r = relu(x + b) (fp32); y = a * r -> fp32, computed from a bf16 and
// an fp32 operand without copying either:
//   x @ W1 saves bf16 x (x needs no gradient: W1's gradient reads it)   2*8*2 = 32 B
//   relu saves r                                                         2*8*4 = 64 B
//   the Mul saves a as it is (bf16) and r (the same storage as relu's)   2*8*2 = 32 B
// 128 B. A cast of a to fp32 for the Mul would keep 64 B instead of 32.
TEST_CASE("an op autocast does not list reads a narrower input as it is", "[precision]") {
  TestGraph t;
  ValueId x = t.Input("x", {t.B(), 8});
  ValueId a = t.Op("MatMul", "mm", {x, t.Param("W1", {8, 8})}, "a", {t.B(), 8});
  ValueId s = t.Op("Add", "add", {x, t.Param("b", {8})}, "s", {t.B(), 8});
  ValueId r = t.Op("Relu", "relu", {s}, "r", {t.B(), 8});
  t.Output(t.Op("Mul", "mul", {a, r}, "y", {t.B(), 8}));

  const TrainingProgram program = DeriveAutocast(t);
  CHECK(CastsOf(program, "a") == 0);
  const SimulationResult r_sim = Replay(t, program);
  CHECK(r_sim.saved_activation_bytes == 128);

  // Backward: the Mul computes a's gradient in fp32 (2*8*4 = 64 B) and autograd casts it to bf16
  // (32 B) for a; the cast step holds both, then frees the fp32 one.
  const Buffer* computed = nullptr;
  const Buffer* grad = nullptr;
  for (const Buffer& b : program.buffers) {
    if (b.name == "grad(a)@mul.float32") computed = &b;
    if (b.name == "grad(a)") grad = &b;
  }
  REQUIRE(computed != nullptr);
  REQUIRE(grad != nullptr);
  CHECK(computed->dtype == DType::kFloat32);
  CHECK(grad->dtype == DType::kBFloat16);
  bool cast_found = false;
  for (const Step& step : program.steps) {
    if (step.kind != StepKind::kCastGradient || step.inputs.empty()) continue;
    if (program.buffer(step.inputs[0]).name != "grad(a)@mul.float32") continue;
    cast_found = true;
    REQUIRE(step.outputs.size() == 1);
    CHECK(program.buffer(step.outputs[0]).name == "grad(a)");
  }
  CHECK(cast_found);
}

}  // namespace
}  // namespace memplan
