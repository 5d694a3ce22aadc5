// What a checkpointed module holds through its backward besides its input: the tensors the graph
// computes from shapes alone that it is called with (analyzer/derivation/checkpoint_arguments.h),
// and with --recompute-reentrant the recomputed outputs of CheckpointFunction's whole re-run.

#include <catch2/catch.hpp>

#include <optional>
#include <string>
#include <vector>

#include "analyzer/derivation/checkpoint_arguments.h"
#include "tests/analyzer/derivation/program_test_derive.h"
#include "tests/analyzer/derivation/program_test_graphs.h"

namespace memplan {
namespace {

using testing::DeriveVerified;
using testing::SumLossSgd;
using testing::TestGraph;

// x[B,4] -> /stem/Mul (x * w) -> h0; a mask built from shapes alone (a folded constant, as HF's
// causal mask and rotary tables are in the exported graph) and two blocks k = 0, 1:
//
//   /model/Shape      s = shape vector, int64 [2]      folded
//   /model/Where      mask [B,4] fp32 from constants     folded, outside every block
//   /blocks.0/Reshape mask_view = view of mask by s      folded, read by blocks.1 (as HF's
//                                                        layers.1 reads layers.0's Unsqueeze of
//                                                        cos)
//   /blocks.k/Add     a_k = h_k + m_k  (m_0 = mask, m_1 = mask_view)   saves nothing
//   /blocks.k/Relu    p_k = relu(a_k)                                   saves p_k
//   /blocks.k/Add_1   h_k+1 = p_k + h_k   (leaves the block)            saves nothing
//
// Every activation and the mask are [B, 4] fp32: 16 B bytes.
struct MaskedBlocks {
  TestGraph t;
  ValueId mask;
  ValueId shape;

  MaskedBlocks() {
    ValueId x = t.Input("x", {t.B(), 4});
    ValueId w = t.Param("w", {4});
    ValueId c = t.Constant("c", {t.B(), 4}, DType::kFloat32);
    ValueId h = t.Op("Mul", "/stem/Mul", {x, w}, "h0", {t.B(), 4});
    shape = Folded(t.Op("Shape", "/model/Shape", {c}, "s", {2}, DType::kInt64));
    mask = Folded(t.Op("Where", "/model/Where", {c, c, c}, "mask", {t.B(), 4}));
    ValueId view =
        Folded(t.Op("Reshape", "/blocks.0/Reshape", {mask, shape}, "mask_view", {t.B(), 4}));
    for (int k = 0; k < 2; ++k) {
      const std::string scope = "/blocks." + std::to_string(k) + "/";
      const std::string K = std::to_string(k);
      ValueId a = t.Op("Add", scope + "Add", {h, k == 0 ? mask : view}, "a" + K, {t.B(), 4});
      ValueId p = t.Op("Relu", scope + "Relu", {a}, "p" + K, {t.B(), 4});
      h = t.Op("Add", scope + "Add_1", {p, h}, "h" + std::to_string(k + 1), {t.B(), 4});
    }
    t.Output(h);
  }

  ValueId Folded(ValueId v) {
    t.graph.mutable_value(v).kind = ValueKind::kConstant;
    return v;
  }

  std::vector<NodeId> Module(int k) const {
    const std::string scope = "/blocks." + std::to_string(k) + "/";
    std::vector<NodeId> nodes;
    if (k == 0) nodes.push_back(t.NodeNamed(scope + "Reshape"));
    for (const char* op : {"Add", "Relu", "Add_1"}) nodes.push_back(t.NodeNamed(scope + op));
    return nodes;
  }

  ProgramOptions Checkpointing(bool reentrant = false) const {
    ProgramOptions options = SumLossSgd();
    options.recompute_modules = {Module(0), Module(1)};
    options.recompute_reentrant = reentrant;
    return options;
  }
};

bool IsView(const Graph& graph, NodeId n) { return graph.node(n).op_type == "Reshape"; }

// The step names where buffer `name` is allocated and freed ("F node", "B node", "R node").
struct Lifetime {
  std::string allocated;
  std::string freed;
};

std::string StepLabel(const Step& step) {
  switch (step.kind) {
    case StepKind::kForward:
      return "F " + step.name;
    case StepKind::kBackward:
      return "B " + step.name;
    case StepKind::kRecompute:
      return "R " + step.name;
    default:
      return step.name;
  }
}

std::optional<Lifetime> LifetimeOf(const TrainingProgram& program, const std::string& name) {
  std::optional<BufferId> id;
  for (const Buffer& b : program.buffers)
    if (b.name == name) id = b.id;
  if (!id) return std::nullopt;
  Lifetime life;
  for (const Step& step : program.steps) {
    for (const MemoryEvent& e : step.begin)
      if (e.buffer == *id && e.action == MemoryEvent::Action::kAlloc)
        life.allocated = StepLabel(step);
    for (const MemoryEvent& e : step.end)
      if (e.buffer == *id && e.action == MemoryEvent::Action::kFree) life.freed = StepLabel(step);
  }
  return life;
}

int CountNamed(const TrainingProgram& program, const std::string& prefix) {
  int n = 0;
  for (const Buffer& b : program.buffers) n += b.name.rfind(prefix, 0) == 0 ? 1 : 0;
  return n;
}

TEST_CASE("checkpoint arguments: shape-built tensors read from outside, once per storage",
          "[recompute][derivation]") {
  MaskedBlocks m;
  const auto is_view = [&](NodeId n) { return IsView(m.t.graph, n); };
  // blocks.0 reads mask (its Add, and its own Reshape); blocks.1 reads blocks.0's view of it,
  // which is mask's storage. The shape vector s is a torch.Size, not a tensor: not held.
  CHECK(CheckpointArguments(m.t.graph, {m.Module(0), m.Module(1)}, is_view) ==
        std::vector<std::vector<ValueId>>{{m.mask}, {m.mask}});
  // A module that builds the folded value itself re-makes it in its re-run: nothing held.
  CHECK(CheckpointArguments(m.t.graph, {{m.t.NodeNamed("/model/Where")}}, is_view) ==
        std::vector<std::vector<ValueId>>{{}});
}

TEST_CASE("a checkpointed module holds the mask it is called with until its backward ends",
          "[recompute][derivation]") {
  MaskedBlocks m;
  // Without checkpointing nothing holds the mask: the Add that reads it saves nothing, and a
  // folded value has no buffer.
  CHECK(CountNamed(DeriveVerified(m.t.graph, SumLossSgd()), "checkpoint_argument(") == 0);

  // Checkpointed: one buffer for both blocks (blocks.1's view shares mask's storage), 16 B bytes,
  // from blocks.0's first forward step to the end of its last backward step (torch frees the
  // frame's args when blocks.0's last saved tensor is released; blocks.1's frame went before).
  TrainingProgram program = DeriveVerified(m.t.graph, m.Checkpointing());
  REQUIRE(CountNamed(program, "checkpoint_argument(") == 1);
  const std::optional<Lifetime> life = LifetimeOf(program, "checkpoint_argument(mask)");
  REQUIRE(life);
  CHECK(life->allocated == "F /blocks.0/Add");
  CHECK(life->freed == "B /blocks.0/Add");
  for (const Buffer& b : program.buffers)
    if (b.name == "checkpoint_argument(mask)")
      CHECK(b.bytes.Evaluate(m.t.Bind(8)).value() == 16 * 8);  // [8, 4] fp32
  // The frame holds it, autograd does not save it (torch's saved_tensors_hooks never see it):
  // saved for backward stay x (the stem Mul's, for w's gradient) and the blocks' inputs h0, h1
  // for their re-runs, 3 x 16 B = 384 bytes at B = 8.
  CHECK(testing::SimulateExactly(program, m.t.Bind(8)).saved_activation_bytes == 3 * 16 * 8);
}

TEST_CASE("reentrant checkpointing re-runs the module's outputs and holds them through backward",
          "[recompute][derivation]") {
  MaskedBlocks m;
  // Non-reentrant (early stop): the re-run ends with the last saved tensor, Relu's p1; the Add_1
  // that writes the block's output does not run again.
  TrainingProgram early = DeriveVerified(m.t.graph, m.Checkpointing(false));
  CHECK(CountNamed(early, "h2.recomputed") == 0);
  // Reentrant: CheckpointFunction.backward re-runs the whole block, Add_1 included, and keeps its
  // output (h2, 16 B bytes) as the `outputs` of its inner torch.autograd.backward: alive from the
  // re-run until the block's last backward step, its first node's.
  TrainingProgram reentrant = DeriveVerified(m.t.graph, m.Checkpointing(true));
  const std::optional<Lifetime> h2 = LifetimeOf(reentrant, "h2.recomputed");
  REQUIRE(h2);
  CHECK(h2->allocated == "R /blocks.1/Add_1");
  CHECK(h2->freed == "B /blocks.1/Add");
  // The gradient of that output is backward()'s `args`, held by the Python frame just as long.
  const std::optional<Lifetime> grad_h2 = LifetimeOf(reentrant, "grad(h2)");
  REQUIRE(grad_h2);
  CHECK(grad_h2->freed == "B /blocks.1/Add");
  const std::optional<Lifetime> h1 = LifetimeOf(reentrant, "h1.recomputed");
  REQUIRE(h1);
  CHECK(h1->allocated == "R /blocks.0/Add_1");
  CHECK(h1->freed == "B /blocks.0/Add");
}

}  // namespace
}  // namespace memplan
