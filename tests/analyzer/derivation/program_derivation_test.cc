// The training program derived from hand-built micro-graphs, step by step. Op facts come from the
// built-in registry (graph/ops): MatMul saves an operand only when the other one needs a
// gradient, Relu saves its output, Gelu its input, SumLoss nothing, MseLoss both operands.

#include <catch2/catch.hpp>

#include "analyzer/derivation/program_derivation.h"
#include "analyzer/program/program_integrity.h"
#include "tests/analyzer/derivation/program_test_derive.h"
#include "tests/analyzer/derivation/program_test_graphs.h"

namespace memplan::testing {
namespace {

std::vector<std::string> Lines(const TrainingProgram& program) {
  std::vector<std::string> lines;
  for (LogicalTime t = 0; t < static_cast<LogicalTime>(program.steps.size()); ++t)
    lines.push_back(StepToString(program, t));
  return lines;
}

TEST_CASE("linear + relu + sum loss: every step's allocations and frees", "[program]") {
  TestGraph t = LinearRelu();
  ProgramOptions options = SumLossSgd();
  const TrainingProgram program = DeriveVerified(t.graph, options);
  // Forward: y is read only by relu (Relu saves its output, MatMul saves x because W needs a
  // gradient), so y dies at relu's End; r and x survive into backward. The sum loss saves
  // nothing. Backward: relu reads r and grad(r), writes grad(y); mm reads x and grad(y) and
  // writes W's contribution, which the first accumulation steals into grad(W). x is last read
  // by mm's backward, but the training loop's variable holds the batch until the micro-batch
  // ends (analyzer/derivation/python_references.h): freed at the body's last step, t8.
  std::vector<std::string> expected = {
      "t0 allocate_parameters parameters  begin +W",
      "t1 load_micro_batch micro_batch  begin +x",
      "t2 forward mm (MatMul)  begin +y",
      "t3 forward relu (Relu)  begin +r  end -y",
      "t4 loss loss (SumLoss)  begin +loss  end -loss",
      "t5 loss_backward loss (SumLoss)  begin +grad(r)",
      "t6 backward relu (Relu)  begin +grad(y)  end -r -grad(r)",
      "t7 backward mm (MatMul)  begin +grad(W)@mm  end -grad(y)",
      "t8 accumulate_gradient grad(W)  begin -grad(W)@mm[if not live grad(W)] "
      "+grad(W)[if not live grad(W)]  end -grad(W)@mm[if live grad(W)@mm] -x",
      "t9 optimizer_step sgd",
      "t10 zero_gradients set_to_none  end -grad(W)",
  };
  CHECK(Lines(program) == expected);
  CHECK(program.setup.size() == 1);
  CHECK(program.micro_batch.begin == 1);
  CHECK(program.micro_batch.end == 9);
  CHECK(program.loss_step == 4);
  CHECK(program.loss == LossKind::kSum);

  // Sizes are symbolic in batch: x = 4*4*batch, y = r = 3*4*batch.
  auto bytes = [&](const std::string& name) {
    for (const Buffer& b : program.buffers)
      if (b.name == name) return b.bytes;
    FAIL("no buffer " << name);
    return Dim();
  };
  CHECK(bytes("x") == Dim(16) * t.B());
  CHECK(bytes("r") == Dim(12) * t.B());
  CHECK(bytes("W") == Dim(48));
  CHECK(bytes("loss") == Dim(4));
  // Held for backward: x (MatMul's saved input) and r (Relu's saved output), not y.
  for (const Buffer& b : program.buffers) {
    bool held = b.name == "x" || b.name == "r";
    CHECK(b.held_for_backward == held);
  }
  CHECK(ToString(program).find("b2 x  other input float32 [batch, 4] bytes=16*batch") !=
        std::string::npos);
}

TEST_CASE("auto loss picks cross entropy for [batch, classes] logits, with int64 labels",
          "[program]") {
  const TestGraph t = Linear(/*in=*/4, /*out=*/10);  // [batch, 10] logits
  const TrainingProgram program = DeriveVerified(t.graph, ProgramOptions{});
  CHECK(program.loss == LossKind::kCrossEntropy);
  const Buffer& label = program.buffer(program.label_buffer);
  CHECK(label.dtype == DType::kInt64);
  CHECK(label.bytes == Dim(8) * t.B());  // one int64 class id per sample
  CHECK(program.step(program.loss_step).op_type == "SoftmaxCrossEntropyLoss");
}

TEST_CASE("auto loss picks mse for a rank-4 output, per-pixel cross entropy when asked",
          "[program]") {
  TestGraph t;
  ValueId x = t.Input("x", {t.B(), 2, 3, 3});
  t.Output(t.Op("Relu", "relu", {x}, "y", {t.B(), 2, 3, 3}));
  auto program = DeriveTrainingProgram(t.graph, ProgramOptions{});
  REQUIRE(program.ok());
  CHECK(program->loss == LossKind::kMse);
  // A segmentation map [N, C, H, W]: the classes are dimension 1 (F.cross_entropy's and ONNX
  // SoftmaxCrossEntropyLoss's layout), one int64 label per pixel: [batch, 3, 3] = 9 * 8 B.
  ProgramOptions ce;
  ce.loss = LossKind::kCrossEntropy;
  auto seg = DeriveTrainingProgram(t.graph, ce);
  REQUIRE(seg.ok());
  CHECK(seg->loss == LossKind::kCrossEntropy);
  const Buffer& label = seg->buffer(seg->label_buffer);
  CHECK(label.dtype == DType::kInt64);
  CHECK(label.bytes == Dim(72) * t.B());
  // The loss keeps the fp32 log-probabilities of every pixel, [batch, 2, 3, 3] = 18 * 4 B
  // (torch: _log_softmax saves its result, nll_loss2d saves it and the target).
  const Step& loss = seg->step(seg->loss_step);
  REQUIRE(loss.extras.size() == 1);
  CHECK(seg->buffer(loss.extras[0]).bytes == Dim(72) * t.B());
  CHECK(seg->buffer(loss.extras[0]).dtype == DType::kFloat32);
  // Rank 1 has no batch of positions: cross entropy on it is an error naming the rank.
  TestGraph v;
  ValueId a = v.Input("a", {v.B()});
  v.Output(v.Op("Relu", "relu", {a}, "b", {v.B()}));
  auto bad = DeriveTrainingProgram(v.graph, ce);
  REQUIRE_FALSE(bad.ok());
  CHECK(bad.error().message.find("rank 1") != std::string::npos);
}

TEST_CASE("bad options are errors naming the problem", "[program]") {
  TestGraph t = LinearRelu();
  ProgramOptions zero_k;
  zero_k.accumulation_steps = 0;
  auto a = DeriveTrainingProgram(t.graph, zero_k);
  REQUIRE_FALSE(a.ok());
  CHECK(a.error().message.find("accumulation steps") != std::string::npos);
  ProgramOptions bad_recompute;
  bad_recompute.recompute = {NodeId(99)};
  auto b = DeriveTrainingProgram(t.graph, bad_recompute);
  REQUIRE_FALSE(b.ok());
  CHECK(b.error().message.find("99") != std::string::npos);
  ProgramOptions bad_output;
  bad_output.loss_outputs = {"nope"};
  CHECK_FALSE(DeriveTrainingProgram(t.graph, bad_output).ok());
}

TEST_CASE("a view allocates nothing and keeps its base alive", "[program]") {
  // x[batch,6] -> MatMul(W[6,6]) -> y -> Reshape(shape const) -> v[batch,2,3] -> Relu -> sum.
  TestGraph t;
  ValueId x = t.Input("x", {t.B(), 6});
  ValueId w = t.Param("W", {6, 6});
  ValueId y = t.Op("MatMul", "mm", {x, w}, "y", {t.B(), 6});
  ValueId shape = t.Constant("shape", {3});
  ValueId v = t.Op("Reshape", "reshape", {y, shape}, "v", {t.B(), 2, 3});
  t.Output(t.Op("Relu", "relu", {v}, "r", {t.B(), 2, 3}));
  ProgramOptions options;
  options.loss = LossKind::kSum;
  const TrainingProgram program = DeriveVerified(t.graph, options);
  for (const Buffer& b : program.buffers) {
    CHECK(b.name != "v");      // the view has no buffer of its own
    CHECK(b.name != "shape");  // constants cost nothing
  }
  std::vector<std::string> lines = Lines(program);
  // Reshape writes y's storage; y dies after relu (its last reader through the view), and the
  // gradient of v is the gradient of y (the view's backward aliases it).
  CHECK(lines[3] == "t3 forward reshape (Reshape)");
  CHECK(lines[4] == "t4 forward relu (Relu)  begin +r  end -y");
  CHECK(lines[8] == "t8 backward reshape (Reshape)");
  // x: held by the training loop until the body's last step (python_references.h).
  CHECK(lines[9] == "t9 backward mm (MatMul)  begin +grad(W)@mm  end -grad(v)");
  const std::string& last = lines[static_cast<size_t>(program.micro_batch.end - 1)];
  CHECK(last.substr(last.size() - 3) == " -x");
}

TEST_CASE("mixed precision: casts are buffers, parameters have master and working copies",
          "[program]") {
  TestGraph t = LinearRelu();
  ProgramOptions options;
  options.loss = LossKind::kSum;
  options.precision = Precision::kFp16;
  const TrainingProgram program = DeriveVerified(t.graph, options);
  auto find = [&](const std::string& name) -> const Buffer& {
    for (const Buffer& b : program.buffers)
      if (b.name == name) return b;
    FAIL("no buffer " << name);
    return program.buffers.front();
  };
  // MatMul is fp16-safe: x is cast to fp16 (and that copy is what MatMul saves); it reads W's
  // fp16 working copy. Relu follows its fp16 input. The sum loss is fp32: r is cast up.
  CHECK(find("W").dtype == DType::kFloat32);
  CHECK(find("W.float16").dtype == DType::kFloat16);
  CHECK(find("W.float16").persistent);
  CHECK(find("x.float16@mm").dtype == DType::kFloat16);
  CHECK(find("x.float16@mm").held_for_backward);
  CHECK_FALSE(find("x").held_for_backward);
  CHECK(find("y").dtype == DType::kFloat16);
  CHECK(find("r").dtype == DType::kFloat16);
  CHECK(find("r.float32@loss").dtype == DType::kFloat32);
  CHECK(find("grad(W)").dtype == DType::kFloat16);
  CHECK(find("loss_scale").persistent);
  std::vector<std::string> lines = Lines(program);
  CHECK(lines[2] == "t2 load_micro_batch micro_batch  begin +x");
  // x is read only to make its fp16 copy, but the loop holds the batch to the body's end.
  CHECK(lines[3] == "t3 forward mm (MatMul) float16  begin +x.float16@mm +y");
  CHECK(program.CountSteps(StepKind::kForward) == 2);
  CHECK(program.step(program.optimizer.begin).kind == StepKind::kUnscaleAndCheckOverflow);

  // A per-node override (the precision planner's knob) keeps MatMul in fp32: no cast of x.
  ProgramOptions forced = options;
  forced.node_dtype = {DType::kFloat32};
  auto fp32_mm = DeriveTrainingProgram(t.graph, forced);
  REQUIRE(fp32_mm.ok());
  for (const Buffer& b : fp32_mm->buffers) CHECK(b.name != "x.float16@mm");
}

}  // namespace
}  // namespace memplan::testing
