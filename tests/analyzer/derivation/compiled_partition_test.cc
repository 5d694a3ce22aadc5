// --compile (analyzer/derivation/compiled_partition.h): the saved set AOTAutograd's min-cut
// partitioner keeps, derived by hand on three micro-graphs. fp32, sum loss (saves nothing), SGD,
// batch 2; bytes are what the simulator holds for backward at the end of forward.
//
// The partitioner's rule (torch/_functorch/partitioners.py): forward values are cut at the
// smallest total size from which backward recomputes what it reads; a matmul's output is never
// recomputed, nor a value a matmul's backward reads (its weight gradient reads its input).

#include <catch2/catch.hpp>

#include <algorithm>

#include "analyzer/derivation/program_derivation.h"
#include "tests/analyzer/derivation/program_test_derive.h"
#include "tests/analyzer/derivation/program_test_graphs.h"

namespace memplan {
namespace {

using testing::DeriveVerified;
using testing::SimulateExactly;
using testing::TestGraph;

ProgramOptions Options(bool compile) {
  ProgramOptions options = testing::SumLossSgd();
  options.compile = compile;
  return options;
}

int64_t SavedBytes(const TestGraph& t, bool compile) {
  const TrainingProgram program = DeriveVerified(t.graph, Options(compile));
  return SimulateExactly(program, t.Bind(2)).saved_activation_bytes;
}

bool Recomputed(const TestGraph& t, const std::string& node) {
  const TrainingProgram program = DeriveVerified(t.graph, Options(true));
  return std::find(program.recomputed.begin(), program.recomputed.end(), t.NodeNamed(node)) !=
         program.recomputed.end();
}

// x [B, 64] -> mm1 (W1 [64, 128]) -> h -> Gelu -> g -> mm2 (W2 [128, 32]) -> y.
// Eager saves x (mm1's input), h (gelu_backward reads self) and g (mm2's input).
// Compiled: g is read by mm2's weight gradient, a matmul, so it is never recomputed; h is mm1's
// output, never recomputed either; nothing changes.
//   x 2*64*4 = 512 + h 2*128*4 = 1024 + g 1024 = 2560 bytes, eager and compiled.
TEST_CASE("compile keeps what a matmul's backward reads: Linear-GELU-Linear is unchanged",
          "[program][compile]") {
  TestGraph t;
  ValueId x = t.Input("x", {t.B(), 64});
  ValueId h = t.Op("MatMul", "mm1", {x, t.Param("W1", {64, 128})}, "h", {t.B(), 128});
  ValueId g = t.Op("Gelu", "gelu", {h}, "g", {t.B(), 128});
  t.Output(t.Op("MatMul", "mm2", {g, t.Param("W2", {128, 32})}, "y", {t.B(), 32}));
  CHECK(SavedBytes(t, false) == 2560);
  CHECK(SavedBytes(t, true) == 2560);
  CHECK_FALSE(Recomputed(t, "gelu"));
}

// The same MLP as exported from nn.Linear with biases: MatMul + Add(b1) -> Gelu -> MatMul + Add.
// torch runs each Linear as one addmm, never recomputed, so the bias add stays with its layer
// (OpSchema::is_linear_layer): nothing is re-run, and the saved bytes are the same 2560
// (x 512 + a = h + b1 1024 + g 1024). Without that rule the cut could save the MatMul's output
// instead (the same bytes) and re-run the Add in backward.
TEST_CASE("compile keeps a Linear's bias add with its matmul", "[program][compile]") {
  TestGraph t;
  ValueId x = t.Input("x", {t.B(), 64});
  ValueId h = t.Op("MatMul", "mm1", {x, t.Param("W1", {64, 128})}, "h", {t.B(), 128});
  ValueId a = t.Op("Add", "bias1", {h, t.Param("b1", {128})}, "a", {t.B(), 128});
  ValueId g = t.Op("Gelu", "gelu", {a}, "g", {t.B(), 128});
  ValueId y = t.Op("MatMul", "mm2", {g, t.Param("W2", {128, 32})}, "y0", {t.B(), 32});
  t.Output(t.Op("Add", "bias2", {y, t.Param("b2", {32})}, "y", {t.B(), 32}));
  CHECK(SavedBytes(t, false) == 2560);
  CHECK(SavedBytes(t, true) == 2560);
  CHECK_FALSE(Recomputed(t, "bias1"));
  CHECK_FALSE(Recomputed(t, "gelu"));
}

// SwiGLU (Llama's MLP): x [B, 64]; gate = x Wg, up = x Wu [B, 128]; s = silu(gate);
// h = s * up; y = h Wd [B, 64].
// Eager: x 512 (both mms' input, once) + gate 1024 (silu_backward reads self) + s 1024 and up
// 1024 (mul saves both) + h 1024 (mm's input) = 4608.
// Compiled: s is read only by mul's backward (pointwise, fusible) and silu is pointwise, so the
// cut through gate (which silu's backward reads anyway) covers it: s is recomputed from gate in
// backward. 4608 - s 1024 = 3584 (docs/compile_rows.jsonl: the SwiGLU row drops silu(gate)).
TEST_CASE("compile recomputes silu(gate) of a SwiGLU in backward", "[program][compile]") {
  TestGraph t;
  ValueId x = t.Input("x", {t.B(), 64});
  ValueId gate = t.Op("MatMul", "gate", {x, t.Param("Wg", {64, 128})}, "g", {t.B(), 128});
  ValueId up = t.Op("MatMul", "up", {x, t.Param("Wu", {64, 128})}, "u", {t.B(), 128});
  ValueId s = t.Op("Swish", "silu", {gate}, "s", {t.B(), 128});
  ValueId h = t.Op("Mul", "mul", {s, up}, "h", {t.B(), 128});
  t.Output(t.Op("MatMul", "down", {h, t.Param("Wd", {128, 64})}, "y", {t.B(), 64}));
  CHECK(SavedBytes(t, false) == 4608);
  CHECK(SavedBytes(t, true) == 3584);
  CHECK(Recomputed(t, "silu"));
  CHECK_FALSE(Recomputed(t, "mul"));
}

// x [B, 64] -> mm (W [64, 128]) -> h -> Relu -> r -> Add(bias b [128]) -> y.
// Eager: x 512 + r 1024 (threshold_backward reads the result) = 1536.
// Compiled: Inductor's threshold_backward is where(r <= 0, 0, grad), so only a bool mask of r
// is needed: cutting at the mask (2*128*1 = 256 bytes) beats r (1024) and h (1024, mm's output).
// x 512 + mask 256 = 768; r itself is freed after forward.
TEST_CASE("compile saves ReLU's bool mask instead of its output", "[program][compile]") {
  TestGraph t;
  ValueId x = t.Input("x", {t.B(), 64});
  ValueId h = t.Op("MatMul", "mm", {x, t.Param("W", {64, 128})}, "h", {t.B(), 128});
  ValueId r = t.Op("Relu", "relu", {h}, "r", {t.B(), 128});
  t.Output(t.Op("Add", "bias", {r, t.Param("b", {128})}, "y", {t.B(), 128}));
  CHECK(SavedBytes(t, false) == 1536);
  CHECK(SavedBytes(t, true) == 768);
  CHECK_FALSE(Recomputed(t, "relu"));
}

// The ReLU of an MLP (TwoLayerMlp: x -> mm1 -> h -> relu -> r -> mm2): r is mm2's input, which
// its weight gradient reads, so r stays and no mask is added: x 64*4*2 = 512 + r 128*4*2 = 1024.
TEST_CASE("compile keeps a ReLU output a matmul's backward reads, with no mask beside it",
          "[program][compile]") {
  const TestGraph t = testing::TwoLayerMlp(64, 128, 32);
  CHECK(SavedBytes(t, false) == 1536);
  CHECK(SavedBytes(t, true) == 1536);
}

TEST_CASE("compile with activation offloading is refused", "[program][compile]") {
  const TestGraph t = testing::TwoLayerMlp(64, 128, 32);
  ProgramOptions options = Options(true);
  options.offload.mode = OffloadMode::kActivations;
  auto refused = DeriveTrainingProgram(t.graph, options);
  REQUIRE_FALSE(refused.ok());
  CHECK(refused.error().message.find("--compile with --offload activations") == 0);
}

}  // namespace
}  // namespace memplan
