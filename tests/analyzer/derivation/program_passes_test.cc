// The derivation's passes one by one (analyzer/derivation/), each on a hand-built micro-graph
// with values derived by hand: gradient flow, dtypes, the recompute set and liveness.

#include <catch2/catch.hpp>

#include "analyzer/derivation/gradient_flow.h"
#include "analyzer/derivation/liveness.h"
#include "analyzer/derivation/program_builder.h"
#include "analyzer/derivation/program_derivation.h"
#include "analyzer/derivation/program_dtypes.h"
#include "analyzer/derivation/recompute_set.h"
#include "analyzer/precision/precision_placement.h"
#include "graph/ops/op_registry.h"
#include "tests/analyzer/derivation/program_test_graphs.h"

namespace memplan {
namespace {

using testing::TestGraph;

std::vector<NodeId> Order(const TestGraph& t) { return t.graph.TopologicalOrder().value(); }

// x[batch, 3] --MatMul(W)--> h[batch, 4] --Gather(h, idx:int64[batch])--> y[batch, 4] -> loss
//                            h --Relu--> r (a second graph output the loss never reads)
TEST_CASE("gradient flow: an integer Gather index and a dead branch need no gradient",
          "[derivation]") {
  TestGraph t;
  ValueId x = t.Input("x", {t.B(), 3});
  ValueId idx = t.Input("idx", {t.B()}, DType::kInt64);
  ValueId w = t.Param("W", {3, 4});
  ValueId h = t.Op("MatMul", "mm", {x, w}, "h", {t.B(), 4});
  ValueId y = t.Op("Gather", "gather", {h, idx}, "y", {t.B(), 4});
  ValueId r = t.Op("Relu", "relu", {h}, "r", {t.B(), 4});
  t.Output(y);
  t.Output(r);

  GradientFlow flow = AnalyzeGradientFlow(t.graph, OpRegistry::Get(), Order(t), {y});
  // requires_grad flows forward from W: h, y and r; x and idx are graph inputs.
  CHECK(flow.requires_grad == std::vector<bool>{false, false, true, true, true, true});
  // Of those, only W, h and y lead to the loss y (r is a dead end); idx never could: Gather has
  // no gradient slot for an integer index.
  CHECK(flow.needs_gradient[w.index()]);
  CHECK(flow.needs_gradient[h.index()]);
  CHECK(flow.needs_gradient[y.index()]);
  CHECK_FALSE(flow.needs_gradient[x.index()]);
  CHECK_FALSE(flow.needs_gradient[idx.index()]);
  CHECK_FALSE(flow.needs_gradient[r.index()]);
  CHECK(flow.gradient_inputs[t.NodeNamed("gather").index()] == std::vector<bool>{true, false});
  CHECK(flow.gradient_inputs[t.NodeNamed("mm").index()] == std::vector<bool>{true, true});
  CHECK(flow.needs_backward[t.NodeNamed("mm").index()]);
  CHECK(flow.needs_backward[t.NodeNamed("gather").index()]);
  CHECK_FALSE(flow.needs_backward[t.NodeNamed("relu").index()]);
}

TEST_CASE("gradient flow: a frozen parameter stops requires_grad", "[derivation]") {
  TestGraph t;
  ValueId x = t.Input("x", {t.B(), 3});
  ValueId w = t.Param("W", {3, 3});
  t.graph.mutable_value(w).trainable = false;
  ValueId h = t.Op("MatMul", "mm", {x, w}, "h", {t.B(), 3});
  ValueId y = t.Op("Relu", "relu", {h}, "y", {t.B(), 3});
  t.Output(y);
  GradientFlow flow = AnalyzeGradientFlow(t.graph, OpRegistry::Get(), Order(t), {y});
  // Nothing upstream of the loss requires grad, so nothing needs a gradient and no node has a
  // backward step (the loss backward alone would have nothing to write).
  CHECK(flow.needs_gradient == std::vector<bool>{false, false, false, false});
  CHECK(flow.needs_backward == std::vector<bool>{false, false});
}

// x[batch, 3] --MatMul(W)--> h --Quantize (unknown to the registry)--> q: int8[batch, 3], the
// value the loss reads. Unknown ops take a gradient on every floating input, so a chain of
// gradient slots joins W to q, but q is an integer: autograd records no edge through it and W
// receives no gradient. Needing one would give W a gradient buffer no backward step writes (the
// fuzzer's "zero_gradients frees 'grad(W)', which is not live"); the derivation refuses the loss.
TEST_CASE("gradient flow: an integer loss value carries no gradient", "[derivation]") {
  TestGraph t;
  ValueId x = t.Input("x", {t.B(), 3});
  ValueId w = t.Param("W", {3, 3});
  ValueId h = t.Op("MatMul", "mm", {x, w}, "h", {t.B(), 3});
  ValueId q = t.Op("Quantize", "quantize", {h}, "q", {t.B(), 3}, DType::kInt8);
  t.Output(q);

  GradientFlow flow = AnalyzeGradientFlow(t.graph, OpRegistry::Get(), Order(t), {q});
  CHECK(flow.requires_grad == std::vector<bool>{false, true, true, false});
  CHECK(flow.needs_gradient == std::vector<bool>{false, false, false, false});
  CHECK(flow.needs_backward == std::vector<bool>{false, false});

  ProgramOptions sum_loss;
  sum_loss.loss = LossKind::kSum;
  auto program = DeriveTrainingProgram(t.graph, sum_loss);
  REQUIRE_FALSE(program.ok());
  CHECK(program.error().message ==
        "model output 'q' is int8: a loss needs a floating-point output, so choose another loss "
        "output");
}

// fp16 placement of (working dtype fp16):
//   h = MatMul(x, W)       "mm"    fp16-safe                         -> fp16
//   s = Softmax(h)         "sm"    fp32-required                     -> fp32
//   r = Relu(h)            "relu"  follows its input h               -> fp16
//   a = Add(r, s)          "add"   follows the widest of fp16, fp32  -> fp32
//   v = Reshape(a, shape)  "view"  a view keeps its input's dtype    -> fp32
// and the cross-entropy loss on v is fp32-required.
struct PrecisionGraph {
  TestGraph t;
  ValueId x, h, s, r, a, v;
};
PrecisionGraph MixedGraph() {
  PrecisionGraph g;
  TestGraph& t = g.t;
  g.x = t.Input("x", {t.B(), 8});
  ValueId w = t.Param("W", {8, 8});
  ValueId shape = t.Constant("shape", {2});
  g.h = t.Op("MatMul", "mm", {g.x, w}, "h", {t.B(), 8});
  g.s = t.Op("Softmax", "sm", {g.h}, "s", {t.B(), 8});
  g.r = t.Op("Relu", "relu", {g.h}, "r", {t.B(), 8});
  g.a = t.Op("Add", "add", {g.r, g.s}, "a", {t.B(), 8});
  g.v = t.Op("Reshape", "view", {g.a, shape}, "v", {t.B(), 8});
  t.Output(g.v);
  return g;
}

TEST_CASE("program dtypes: each node's dtype under fp16, an override, and fp32", "[derivation]") {
  PrecisionGraph g = MixedGraph();
  const TestGraph& t = g.t;
  auto node = [&](const ProgramDTypes& d, const char* name) {
    return d.node_compute[t.NodeNamed(name).index()];
  };
  const AmpCategory loss_amp = AmpCategory::kFp32Required;  // SoftmaxCrossEntropyLoss
  ProgramDTypes fp16 =
      DeriveProgramDTypes(t.graph, OpRegistry::Get(), Order(t),
                          RegimeOf(Precision::kFp16, AmpMode::kMasterWeights), {}, g.v, loss_amp);
  CHECK(node(fp16, "mm") == DType::kFloat16);
  CHECK(node(fp16, "sm") == DType::kFloat32);
  CHECK(node(fp16, "relu") == DType::kFloat16);
  CHECK(node(fp16, "add") == DType::kFloat32);
  CHECK(node(fp16, "view") == DType::kFloat32);
  CHECK(fp16.value[g.x.index()] == DType::kFloat32);  // a graph input keeps its dtype
  CHECK(fp16.value[g.h.index()] == DType::kFloat16);
  CHECK(fp16.value[g.r.index()] == DType::kFloat16);
  CHECK(fp16.value[g.v.index()] == DType::kFloat32);
  CHECK(fp16.loss_compute == DType::kFloat32);

  // Forcing relu to fp32 changes only relu and r (add was fp32 already).
  std::vector<std::optional<DType>> override_dtype(t.graph.num_nodes());
  override_dtype[t.NodeNamed("relu").index()] = DType::kFloat32;
  ProgramDTypes forced = DeriveProgramDTypes(t.graph, OpRegistry::Get(), Order(t),
                                             RegimeOf(Precision::kFp16, AmpMode::kMasterWeights),
                                             override_dtype, g.v, loss_amp);
  CHECK(node(forced, "relu") == DType::kFloat32);
  CHECK(forced.value[g.r.index()] == DType::kFloat32);
  CHECK(node(forced, "mm") == DType::kFloat16);

  // fp32 runs the graph as written: no compute dtype anywhere, graph dtypes for every value.
  ProgramDTypes fp32 =
      DeriveProgramDTypes(t.graph, OpRegistry::Get(), Order(t),
                          RegimeOf(Precision::kFp32, AmpMode::kMasterWeights), {}, g.v, loss_amp);
  for (DType d : fp32.node_compute) CHECK(d == DType::kUndefined);
  CHECK(fp32.value[g.h.index()] == DType::kFloat32);
  CHECK(fp32.loss_compute == DType::kUndefined);
}

TEST_CASE("the placement and the derivation share one dtype decision", "[derivation]") {
  PrecisionGraph g = MixedGraph();
  const TestGraph& t = g.t;
  PrecisionOptions placement_options;
  placement_options.mode = Precision::kFp16;
  PrecisionPlacement placement = PlacePrecision(t.graph, placement_options).value();
  // The reasons as hand-derived above: add follows its widest input s (fp32), relu follows h.
  const NodePlacement& add = placement.nodes[t.NodeNamed("add").index()];
  CHECK(add.reason == PlacementReason::kFollowsInputs);
  CHECK(add.dtype == DType::kFloat32);
  CHECK(add.decided_by == g.s);
  CHECK(placement.nodes[t.NodeNamed("relu").index()].decided_by == g.h);
  CHECK(placement.nodes[t.NodeNamed("sm").index()].reason == PlacementReason::kFp32Required);
  ProgramOptions policy;
  policy.precision = Precision::kFp16;
  ProgramOptions placed;
  ApplyPlacement(placement, placed);
  TrainingProgram a = DeriveTrainingProgram(t.graph, policy).value();
  TrainingProgram b = DeriveTrainingProgram(t.graph, placed).value();
  CHECK(ToString(a) == ToString(b));
  // Every forward step runs the dtype the placement reports.
  for (const Step& step : b.steps) {
    if (step.kind != StepKind::kForward) continue;
    CHECK(step.compute_dtype == placement.nodes[step.node.index()].dtype);
  }
}

TEST_CASE("recompute set: validated, limited to nodes that run, sorted", "[derivation]") {
  TestGraph t;
  ValueId x = t.Input("x", {t.B(), 4});
  ValueId c = t.Constant("c", {4}, DType::kFloat32);
  // A node on constants only is folded: it has no step, so nothing to recompute.
  ValueId folded = t.Op("Neg", "folded", {c}, "c2", {4});
  t.graph.mutable_value(folded).kind = ValueKind::kConstant;
  ValueId a = t.Op("Relu", "a", {x}, "ya", {t.B(), 4});
  ValueId b = t.Op("Relu", "b", {a}, "yb", {t.B(), 4});
  t.Output(b);
  const NodeId na = t.NodeNamed("a");
  const NodeId nb = t.NodeNamed("b");
  const NodeId nf = t.NodeNamed("folded");

  RecomputeSet set = ResolveRecomputeSet(t.graph, {nb, nf, na, nb}).value();
  CHECK(set.nodes == std::vector<NodeId>{na, nb});
  CHECK(set.recompute == std::vector<bool>{false, true, true});

  auto bad = ResolveRecomputeSet(t.graph, {NodeId(7)});
  REQUIRE_FALSE(bad.ok());
  CHECK(bad.error().message == "recompute names node id 7, but the graph has 3 nodes");
}

// Four steps by hand: t0 allocates x, t1 reads x and allocates a, t2 is the loss (reads a),
// t3 is a backward step that reads a again. A persistent buffer and one freed explicitly are
// left alone.
TEST_CASE("liveness: frees at the last use, held across the loss", "[derivation]") {
  TestGraph t;
  ProgramBuilder builder(t.graph);
  builder.NewStep(StepKind::kLoadMicroBatch, "load");
  BufferId x = builder.NewBuffer("x", BufferRole::kInput, MemoryCategory::kOther, DType::kFloat32,
                                 Shape{{Dim(4)}});
  builder.AllocateHere(x);
  BufferId w = builder.NewBuffer("W", BufferRole::kParameterMaster, MemoryCategory::kParameters,
                                 DType::kFloat32, Shape{{Dim(4)}}, ValueId(), NodeId(),
                                 /*persistent=*/true);
  builder.AllocateHere(w);
  builder.NewStep(StepKind::kForward, "f");
  builder.Touch(x);
  BufferId a = builder.NewBuffer("a", BufferRole::kValue, MemoryCategory::kTransients,
                                 DType::kFloat32, Shape{{Dim(4)}});
  builder.AllocateHere(a);
  BufferId s = builder.NewBuffer("found_inf", BufferRole::kScalar, MemoryCategory::kOther,
                                 DType::kFloat32, Shape{{}});
  builder.AllocateHere(s);
  builder.MarkExplicitFree(s);
  builder.NewStep(StepKind::kLoss, "loss");
  builder.program().loss_step = 2;
  builder.Touch(a);
  builder.NewStep(StepKind::kBackward, "f");
  builder.Touch(a);

  LivenessPlan plan = PlanLiveness(builder.program(), builder.uses());
  REQUIRE(plan.frees.size() == 2);
  CHECK(plan.frees[0].buffer == x);
  CHECK(plan.frees[0].step == 1);  // last read by the forward step
  CHECK(plan.frees[1].buffer == a);
  CHECK(plan.frees[1].step == 3);  // read again by backward
  CHECK(plan.held_for_backward == std::vector<BufferId>{a});

  TrainingProgram program = builder.TakeProgram();
  ApplyLiveness(plan, program);
  CHECK(program.buffer(a).held_for_backward);
  CHECK(program.buffer(a).category == MemoryCategory::kActivations);
  CHECK_FALSE(program.buffer(x).held_for_backward);
  REQUIRE(program.steps[3].end.size() == 1);
  CHECK(program.steps[3].end[0].buffer == a);
}

}  // namespace
}  // namespace memplan
