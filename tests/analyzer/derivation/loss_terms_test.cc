// A loss over several outputs (issue 44): the loss is the sum of one term per named output, as a
// model with several trained heads trains (`(l1 + l2).backward()`). Autograd seeds the sum with
// one scalar and AddBackward hands it to every term, so each term's backward writes its output's
// gradient, and every head on the way keeps what its backward needs. Op facts from the registry:
// MatMul saves the operand the other needs for its gradient, Relu and Sigmoid their output,
// cross entropy its log-probabilities and label, mse both operands.

#include <catch2/catch.hpp>

#include <algorithm>
#include <string>
#include <vector>

#include "analyzer/derivation/program_derivation.h"
#include "tests/analyzer/derivation/program_test_derive.h"
#include "tests/analyzer/derivation/program_test_graphs.h"

namespace memplan::testing {
namespace {

// x[batch, 4] -> MatMul W0[4, 4] -> h -> Relu -> r; class head r -> MatMul Wa[4, 3] -> a
// [batch, 3]; box head r -> MatMul Wb[4, 2] -> b -> Sigmoid -> s [batch, 2]. Outputs a, s.
TestGraph TwoHeads() {
  TestGraph t;
  ValueId x = t.Input("x", {t.B(), 4});
  ValueId h = t.Op("MatMul", "trunk", {x, t.Param("W0", {4, 4})}, "h", {t.B(), 4});
  ValueId r = t.Op("Relu", "relu", {h}, "r", {t.B(), 4});
  t.Output(t.Op("MatMul", "class_head", {r, t.Param("Wa", {4, 3})}, "a", {t.B(), 3}));
  ValueId b = t.Op("MatMul", "box_head", {r, t.Param("Wb", {4, 2})}, "b", {t.B(), 2});
  t.Output(t.Op("Sigmoid", "box_sigmoid", {b}, "s", {t.B(), 2}));
  return t;
}

ProgramOptions BothHeads() {
  ProgramOptions options;
  options.loss_outputs = {"a", "s"};
  options.output_losses = {LossKind::kCrossEntropy, LossKind::kMse};
  return options;
}

const Buffer* Named(const TrainingProgram& program, const std::string& name) {
  for (const Buffer& b : program.buffers)
    if (b.name == name) return &b;
  return nullptr;
}

std::vector<std::string> StepNames(const TrainingProgram& program, StepKind kind) {
  std::vector<std::string> names;
  for (const Step& s : program.steps)
    if (s.kind == kind) names.push_back(s.name);
  return names;
}

TEST_CASE("a loss over two outputs trains both heads and keeps what each needs", "[program]") {
  const TestGraph t = TwoHeads();
  // The default trains the first output only (a graph's further outputs are most often not
  // trained): the box head runs forward and keeps nothing. Saved at batch 2, fp32: x (trunk's W0
  // needs it) 2*4*4 = 32, r (Relu's output, class_head's operand) 32, the log-probabilities
  // [2, 3] 24 and the int64 labels [2] 16: 104 B.
  const TrainingProgram one = DeriveVerified(t.graph, ProgramOptions{});
  REQUIRE(one.loss_terms.size() == 1);
  CHECK(SimulateExactly(one, t.Bind(2)).saved_activation_bytes == 104);
  CHECK_FALSE(Named(one, "s")->held_for_backward);
  CHECK(Named(one, "grad(s)") == nullptr);

  // Both heads: the box head adds s (Sigmoid's output, also what mse reads) [2, 2] 16 B and its
  // float target [2, 2] 16 B; box_head's operand is r, already kept: 104 + 32 = 136 B.
  const TrainingProgram two = DeriveVerified(t.graph, BothHeads());
  REQUIRE(two.loss_terms.size() == 2);
  CHECK(two.loss_terms[0].kind == LossKind::kCrossEntropy);
  CHECK(two.loss_terms[1].kind == LossKind::kMse);
  CHECK(SimulateExactly(two, t.Bind(2)).saved_activation_bytes == 136);
  CHECK(Named(two, "s")->held_for_backward);
  // One label per term: int64 class ids [batch] (8 B a sample) and float boxes [batch, 2] (8 B).
  CHECK(two.buffer(two.loss_terms[0].label).bytes == Dim(8) * t.B());
  CHECK(two.buffer(two.loss_terms[1].label).bytes == Dim(8) * t.B());
  CHECK(two.buffer(two.loss_terms[1].label).dtype == DType::kFloat32);
  // Each output gets a gradient of its own size, as autograd's loss backward writes it:
  // grad(a) [batch, 3] and grad(s) [batch, 2].
  REQUIRE(Named(two, "grad(a)") != nullptr);
  REQUIRE(Named(two, "grad(s)") != nullptr);
  CHECK(Named(two, "grad(a)")->bytes == Dim(12) * t.B());
  CHECK(Named(two, "grad(s)")->bytes == Dim(8) * t.B());
  // The terms' forward steps are consecutive, the last is the forward/backward boundary; their
  // backward steps run last term first (autograd's ready queue takes the node created last).
  CHECK(StepNames(two, StepKind::kLoss) == std::vector<std::string>{"loss.a", "loss.s"});
  CHECK(StepNames(two, StepKind::kLossBackward) == std::vector<std::string>{"loss.s", "loss.a"});
  CHECK(two.loss_step == two.loss_terms[1].step);
  CHECK(two.loss_terms[1].step == two.loss_terms[0].step + 1);
  CHECK(two.step(two.loss_terms[0].backward_step).kind == StepKind::kLossBackward);
  // The trunk's output r gets a gradient from both heads: two backward steps write into it.
  int writers = 0;
  const BufferId grad_r = Named(two, "grad(r)")->id;
  for (const Step& s : two.steps)
    for (const GradientWrite& w : s.input_gradients) writers += w.target == grad_r ? 1 : 0;
  CHECK(writers == 2);
}

TEST_CASE("one loss kind applies to every loss output", "[program]") {
  const TestGraph t = TwoHeads();
  ProgramOptions options;
  options.loss_outputs = {"a", "s"};
  options.loss = LossKind::kSum;
  const TrainingProgram program = DeriveVerified(t.graph, options);
  REQUIRE(program.loss_terms.size() == 2);
  CHECK(program.loss_terms[0].kind == LossKind::kSum);
  CHECK(program.loss_terms[1].kind == LossKind::kSum);
  CHECK_FALSE(program.loss_terms[1].label.valid());  // the sum loss has no label
}

TEST_CASE("bad loss outputs are errors naming the problem", "[program]") {
  const TestGraph t = TwoHeads();
  ProgramOptions twice;
  twice.loss_outputs = {"a", "a"};
  auto a = DeriveTrainingProgram(t.graph, twice);
  REQUIRE_FALSE(a.ok());
  CHECK(a.error().message == "loss output 'a' is named twice");
  ProgramOptions counts = BothHeads();
  counts.output_losses = {LossKind::kMse, LossKind::kMse, LossKind::kMse};
  auto b = DeriveTrainingProgram(t.graph, counts);
  REQUIRE_FALSE(b.ok());
  CHECK(b.error().message.find("3 losses for 2 loss outputs") != std::string::npos);
  ProgramOptions chunked = BothHeads();
  chunked.loss_chunks = 2;
  auto c = DeriveTrainingProgram(t.graph, chunked);
  REQUIRE_FALSE(c.ok());
  CHECK(c.error().message.find("--loss-chunks") != std::string::npos);
}

}  // namespace
}  // namespace memplan::testing
