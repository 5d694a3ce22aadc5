// The class axis of cross-entropy logits, read from the graph (analyzer/derivation/
// logits_class_axis.h): a rank-3 output is [batch, seq, vocab] (classes last) or [N, C, T]
// (classes at 1) by what computes it, and the label drops that axis.

#include <catch2/catch.hpp>

#include <vector>

#include "analyzer/derivation/logits_class_axis.h"
#include "graph/ops/op_registry.h"
#include "tests/analyzer/derivation/program_test_derive.h"
#include "tests/analyzer/derivation/program_test_graphs.h"

namespace memplan::testing {
namespace {

// x[batch, 6, 8] (N, T, D) -> MatMul W[8, 5] -> z [batch, 6, 5] (N, T, C).
struct Head {
  TestGraph t;
  ValueId z;
};
Head SequenceHead() {
  Head h;
  ValueId x = h.t.Input("x", {h.t.B(), 6, 8});
  h.z = h.t.Op("MatMul", "head", {x, h.t.Param("W", {8, 5})}, "z", {h.t.B(), 6, 5});
  return h;
}

std::optional<size_t> Traced(const TestGraph& t, ValueId v) {
  return TraceClassAxis(t.graph, OpRegistry::Get(), v);
}

TEST_CASE("logits transposed after the class axis keep their classes at 1", "[program]") {
  Head h = SequenceHead();
  ValueId nct = h.t.Op("Transpose", "to_nct", {h.z}, "logits", {h.t.B(), 5, 6});
  h.t.graph.mutable_node(h.t.NodeNamed("to_nct"))
      .attributes.Set("perm", std::vector<int64_t>{0, 2, 1});
  h.t.Output(nct);
  // The head's features (its last axis, 2) end at position 1: perm[1] == 2.
  CHECK(Traced(h.t, h.z) == std::optional<size_t>(2));
  CHECK(Traced(h.t, nct) == std::optional<size_t>(1));
  ProgramOptions ce;
  ce.loss = LossKind::kCrossEntropy;
  const TrainingProgram program = DeriveVerified(h.t.graph, ce);
  REQUIRE(program.loss_terms.size() == 1);
  CHECK(program.loss_terms[0].class_axis == 1);
  // The label is [batch, T] = [batch, 6]: 6 int64 ids (48 B) a sample. Read as [batch, seq,
  // vocab] it would have been [batch, 5] with T = 6 taken for the class count.
  const Buffer& label = program.buffer(program.label_buffer);
  CHECK(label.shape.dims.size() == 2);
  CHECK(label.shape.dims[1] == Dim(6));
  CHECK(label.bytes == Dim(48) * h.t.B());
}

TEST_CASE("a language model's [batch, seq, vocab] logits keep their classes last", "[program]") {
  Head h = SequenceHead();
  h.t.Output(h.z);
  const TrainingProgram program = DeriveVerified(h.t.graph, ProgramOptions{});
  CHECK(program.loss == LossKind::kCrossEntropy);  // auto: rank-3 floating logits
  CHECK(program.loss_terms[0].class_axis == 2);
  CHECK(program.buffer(program.label_buffer).bytes == Dim(48) * h.t.B());  // [batch, 6] int64
}

TEST_CASE("a LogSoftmax axis names the classes, a Reshape leaves the rank's rule", "[program]") {
  TestGraph t;
  ValueId x = t.Input("x", {t.B(), 5, 6});
  ValueId r = t.Op("Relu", "relu", {x}, "r", {t.B(), 5, 6});
  ValueId lp = t.Op("LogSoftmax", "log_softmax", {r}, "lp", {t.B(), 5, 6});
  t.graph.mutable_node(t.NodeNamed("log_softmax")).attributes.Set("axis", int64_t{1});
  // An elementwise op after it (a temperature scale) keeps the axis.
  ValueId scaled = t.Op("Relu", "after", {lp}, "scaled", {t.B(), 5, 6});
  CHECK(Traced(t, lp) == std::optional<size_t>(1));
  CHECK(Traced(t, scaled) == std::optional<size_t>(1));
  ValueId flat = t.Input("flat", {t.B(), 30});
  ValueId shape = t.Constant("shape", {3});
  ValueId reshaped = t.Op("Reshape", "reshape", {flat, shape}, "reshaped", {t.B(), 6, 5});
  CHECK_FALSE(Traced(t, reshaped).has_value());
  CHECK_FALSE(Traced(t, x).has_value());  // a graph input: nothing computes it
}

}  // namespace
}  // namespace memplan::testing
