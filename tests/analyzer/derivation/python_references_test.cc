// Python's references in eager PyTorch hold a buffer past its last reader
// (analyzer/derivation/python_references.h): the batch variables until the micro-batch ends, the
// model's output until the loss step, a module's input until the module returns. On a graph of
// Adds (which save nothing for backward, so only these holds keep anything alive) with the
// exporter's scoped node names:
//
//   x (input) -> /stem/Add -> s -> /block/first/Add -> t -> /block/second/Add -> u -> /head/Add
//
// s is made in stem and read only by block.first, but it is block's input: block's forward holds
// it until block's last node, /block/second/Add. t is read by block.second only, inside block,
// which made it: its last reader frees it. x is the batch: the loop holds it to the micro-batch's
// end.

#include <catch2/catch.hpp>

#include "analyzer/derivation/python_references.h"
#include "tests/analyzer/derivation/program_test_derive.h"
#include "tests/analyzer/derivation/program_test_graphs.h"
#include "tests/analyzer/derivation/program_test_lookup.h"

namespace memplan {
namespace {

using testing::FreedAt;
using testing::Named;
using testing::StepOf;

testing::TestGraph ScopedAdds() {
  testing::TestGraph t;
  ValueId x = t.Input("x", {t.B(), 4});
  ValueId s = t.Op("Add", "/stem/Add", {x, x}, "s", {t.B(), 4});
  ValueId u1 = t.Op("Add", "/block/first/Add", {s, s}, "t", {t.B(), 4});
  ValueId u2 = t.Op("Add", "/block/second/Add", {u1, u1}, "u", {t.B(), 4});
  t.Output(t.Op("Add", "/head/Add", {u2, u2}, "v", {t.B(), 4}));
  return t;
}

TEST_CASE("python references: a module's input lives until the module's last node", "[program]") {
  const testing::TestGraph t = ScopedAdds();
  const TrainingProgram p = testing::DeriveVerified(t.graph, testing::SumLossSgd());
  const LogicalTime second = StepOf(p, StepKind::kForward, "/block/second/Add");
  // s: last read by /block/first/Add, held by block until /block/second/Add.
  CHECK(FreedAt(p, Named(p, "s").id) == second);
  // t: made and read inside block: freed by its last reader, /block/second/Add, as before.
  CHECK(FreedAt(p, Named(p, "t").id) == second);
  // The holds do not make anything "held for backward": Add saves nothing.
  CHECK_FALSE(Named(p, "s").held_for_backward);
  CHECK_FALSE(Named(p, "x").held_for_backward);
}

TEST_CASE("python references: the batch lives until the micro-batch ends", "[program]") {
  const testing::TestGraph t = ScopedAdds();
  const TrainingProgram p = testing::DeriveVerified(t.graph, testing::SumLossSgd());
  // Read only by /stem/Add, yet freed at the End of the body's last step.
  CHECK(FreedAt(p, Named(p, "x").id) == p.micro_batch.end - 1);
  const std::vector<LogicalTime> holds = PythonReferenceHolds(t.graph, p);
  CHECK(holds[Named(p, "x").id.index()] == p.micro_batch.end - 1);
  CHECK(holds[Named(p, "s").id.index()] == StepOf(p, StepKind::kForward, "/block/second/Add"));
  // u is head's input: held until head's last node, which is its only reader: no later free.
  const LogicalTime head = StepOf(p, StepKind::kForward, "/head/Add");
  CHECK(holds[Named(p, "u").id.index()] == head);
  CHECK(FreedAt(p, Named(p, "u").id) == head);
  // v, the output, is made by head and read by the loss outside every module: the caller holds
  // what the model returns until the loss step, which is also its last reader.
  CHECK(holds[Named(p, "v").id.index()] == p.loss_step);
  CHECK(FreedAt(p, Named(p, "v").id) == p.loss_step);
}

TEST_CASE("python references: unscoped node names hold only the batch and the output",
          "[program]") {
  // The hand-built graphs of the other tests ("mm1", "relu"): no exporter scopes, no module; the
  // model's output y is held to the loss step, its last reader anyway.
  const testing::TestGraph t = testing::TwoLayerMlp(4, 8, 2);
  const TrainingProgram p = testing::DeriveVerified(t.graph, testing::SumLossSgd());
  const std::vector<LogicalTime> holds = PythonReferenceHolds(t.graph, p);
  for (const Buffer& b : p.buffers) {
    if (b.role == BufferRole::kInput) {
      CHECK(holds[b.id.index()] == p.micro_batch.end - 1);
    } else if (b.name == "y") {
      CHECK(holds[b.id.index()] == p.loss_step);
    } else {
      CHECK(holds[b.id.index()] == -1);
    }
  }
}

}  // namespace
}  // namespace memplan
