// Mixed-precision casts are real buffers: one per (value, dtype) in the forward, shared by every
// reader, freed after the last reader or held for backward when a reader saves it; a chain of
// fp16 ops needs no cast; each parameter has exactly one working copy. Byte counts by hand.

#include <catch2/catch.hpp>

#include <utility>

#include "analyzer/derivation/program_derivation.h"
#include "analyzer/program/program_integrity.h"
#include "analyzer/simulation/exact_allocator.h"
#include "analyzer/simulation/simulator.h"
#include "tests/analyzer/derivation/program_test_derive.h"
#include "tests/analyzer/derivation/program_test_graphs.h"
#include "tests/analyzer/derivation/program_test_lookup.h"

namespace memplan {
namespace {

using testing::BytesPerSample;
using testing::FreedAt;
using testing::Named;
using testing::StepOf;
using testing::TestGraph;

TrainingProgram Derive(const TestGraph& t, Precision precision) {
  ProgramOptions options;
  options.loss = LossKind::kSum;
  options.precision = precision;
  return testing::DeriveVerified(t.graph, options);
}

std::vector<const Buffer*> BuffersWithRole(const TrainingProgram& program, BufferRole role) {
  std::vector<const Buffer*> found;
  for (const Buffer& b : program.buffers)
    if (b.role == role) found.push_back(&b);
  return found;
}

// x [B,4] fp32 input, W1 and W2 [4,4] parameters, sum loss (fp32):
//   mm1  = MatMul(x, W1) -> y    fp16: casts x          (x.float16@mm1, saved by mm1)
//   sm   = Softmax(y)    -> s    fp32: casts y          (y.float32@sm, softmax saves its output)
//   mm2  = MatMul(s, W2) -> a    fp16: casts s          (s.float16@mm2, saved by mm2 and mm3)
//   mm3  = MatMul(s, W2) -> b    fp16: reads s.float16@mm2, no cast of its own
//   add  = Add(a, b)     -> o    follows fp16: no cast  (a chain of fp16 ops)
//   relu = Relu(o)       -> r    follows fp16: no cast
//   loss = sum(r)                fp32: casts r          (r.float32@loss, saves nothing)
TestGraph SharedCastGraph() {
  testing::MatMulSoftmax m = testing::MatMulThenSoftmax();
  TestGraph& t = m.t;
  ValueId a = t.Op("MatMul", "mm2", {m.s, m.w2}, "a", {t.B(), 4});
  ValueId b = t.Op("MatMul", "mm3", {m.s, m.w2}, "b", {t.B(), 4});
  ValueId o = t.Op("Add", "add", {a, b}, "o", {t.B(), 4});
  t.Output(t.Op("Relu", "relu", {o}, "r", {t.B(), 4}));
  return std::move(m.t);
}

TEST_CASE("one cast per (value, dtype), shared by its forward readers", "[precision]") {
  TestGraph t = SharedCastGraph();
  TrainingProgram program = Derive(t, Precision::kFp16);

  std::vector<std::string> casts;
  int64_t cast_bytes = 0, held_cast_bytes = 0;
  for (const Buffer* b : BuffersWithRole(program, BufferRole::kCast)) {
    casts.push_back(b->name);
    cast_bytes += BytesPerSample(t, *b);
    if (b->held_for_backward) held_cast_bytes += BytesPerSample(t, *b);
  }
  // Four casts, not five: mm3 shares mm2's copy of s.
  CHECK(casts == std::vector<std::string>{"x.float16@mm1", "y.float32@sm", "s.float16@mm2",
                                          "r.float32@loss"});
  // Per sample: x->fp16 4*2 + y->fp32 4*4 + s->fp16 4*2 + r->fp32 4*4 = 8 + 16 + 8 + 16 = 48.
  CHECK(cast_bytes == 48);
  // Held for backward: x.float16@mm1 (mm1 saves A because W1 needs a gradient) and
  // s.float16@mm2 (mm2 and mm3 save it; one buffer): 8 + 8 = 16.
  CHECK(held_cast_bytes == 16);
  CHECK(Named(program, "x.float16@mm1").held_for_backward);
  CHECK(Named(program, "s.float16@mm2").held_for_backward);
  CHECK_FALSE(Named(program, "y.float32@sm").held_for_backward);
  CHECK_FALSE(Named(program, "r.float32@loss").held_for_backward);

  // mm3 reads the shared copy and makes no cast; add and relu (fp16 after fp16) make none.
  const Buffer& shared = Named(program, "s.float16@mm2");
  const Step& mm3 = program.step(StepOf(program, StepKind::kForward, "mm3"));
  CHECK(mm3.casts.empty());
  CHECK(mm3.inputs.at(0) == shared.id);
  CHECK(program.step(StepOf(program, StepKind::kForward, "mm2")).casts.size() == 1);
  CHECK(program.step(StepOf(program, StepKind::kForward, "add")).casts.empty());
  CHECK(program.step(StepOf(program, StepKind::kForward, "relu")).casts.empty());
  // Backward runs mm3 before mm2, so the shared copy is freed after mm2's backward.
  CHECK(FreedAt(program, shared.id) == StepOf(program, StepKind::kBackward, "mm2"));
  CHECK(FreedAt(program, Named(program, "y.float32@sm").id) ==
        StepOf(program, StepKind::kForward, "sm"));

  // One working copy per parameter, however many fp16 ops read it: W2 feeds mm2 and mm3.
  std::vector<std::string> working;
  for (const Buffer* b : BuffersWithRole(program, BufferRole::kParameterWorking)) {
    working.push_back(b->name);
    CHECK(b->persistent);
    CHECK(BytesPerSample(t, *b) == 4 * 4 * 2);  // [4,4] fp16
  }
  CHECK(working == std::vector<std::string>{"W1.float16", "W2.float16"});
  CHECK(mm3.inputs.at(1) == Named(program, "W2.float16").id);
}

// y (fp16) read by two fp32 ops that save only their outputs: the shared cast dies after the
// second reader, not the first.
//   mm  = MatMul(x, W)   -> y    fp16 (casts x)
//   sm  = Softmax(y)     -> s1   fp32 (casts y: y.float32@sm)
//   lsm = LogSoftmax(y)  -> s2   fp32 (reads y.float32@sm)
//   add = Add(s1, s2)    -> o    follows fp32
TEST_CASE("a shared cast is freed after its last reader", "[precision]") {
  TestGraph t;
  ValueId x = t.Input("x", {t.B(), 6});
  ValueId w = t.Param("W", {6, 6});
  ValueId y = t.Op("MatMul", "mm", {x, w}, "y", {t.B(), 6});
  ValueId s1 = t.Op("Softmax", "sm", {y}, "s1", {t.B(), 6});
  ValueId s2 = t.Op("LogSoftmax", "lsm", {y}, "s2", {t.B(), 6});
  t.Output(t.Op("Add", "add", {s1, s2}, "o", {t.B(), 6}));
  TrainingProgram program = Derive(t, Precision::kBf16);

  std::vector<std::string> casts;
  for (const Buffer* b : BuffersWithRole(program, BufferRole::kCast)) casts.push_back(b->name);
  // The sum loss reads o, already fp32: no cast at the loss.
  CHECK(casts == std::vector<std::string>{"x.bfloat16@mm", "y.float32@sm"});
  const Buffer& cast = Named(program, "y.float32@sm");
  CHECK(BytesPerSample(t, cast) == 6 * 4);
  CHECK_FALSE(cast.held_for_backward);
  CHECK(program.step(StepOf(program, StepKind::kForward, "lsm")).casts.empty());
  CHECK(program.step(StepOf(program, StepKind::kForward, "lsm")).inputs.at(0) == cast.id);
  CHECK(FreedAt(program, cast.id) == StepOf(program, StepKind::kForward, "lsm"));
}

// x [B,64] -> MatMul W1 [64,128] -> Relu -> MatMul W2 [128,10] -> the logits y, sum loss
// (testing::TwoLayerMlp(64, 128, 10)). Saved for backward:
//   fp32: x (mm1 saves A, 64*4 = 256) + r (relu's output, also mm2's A, 128*4 = 512) = 768
//   fp16: x.float16@mm1 (64*2 = 128) + r in fp16 (128*2 = 256)                        = 384
// (h dies after relu, which saves its output; the fp32 loss cast of the logits saves nothing.)
TEST_CASE("mixed precision halves an MLP's saved activations", "[precision]") {
  const TestGraph t = testing::TwoLayerMlp(/*in=*/64, /*hidden=*/128, /*out=*/10);

  auto saved = [&](Precision precision, int64_t batch) {
    TrainingProgram program = Derive(t, precision);
    ExactAllocator exact;
    auto result = Simulate(program, t.Bind(batch), exact);
    REQUIRE(result.ok());
    return result->saved_activation_bytes;
  };
  CHECK(saved(Precision::kFp32, 1) == 768);
  CHECK(saved(Precision::kFp16, 1) == 384);
  CHECK(saved(Precision::kBf16, 1) == 384);
  CHECK(saved(Precision::kFp32, 32) == 32 * 768);
  CHECK(saved(Precision::kFp16, 32) == 32 * 384);
}

}  // namespace
}  // namespace memplan
