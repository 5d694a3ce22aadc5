// The executor runs a program that saves a contiguous copy in an operand's place
// (SaveContiguousCopy: matmul's reshape of a transposed operand): forward makes the copy, backward
// reads it, and the weight gradient is the one the same product gives without the transposes.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>

#include "graph/ops/op_registry.h"
#include "tests/graph/proto_model.h"
#include "tests/runtime/executor_test_support.h"

namespace memplan::testing {
namespace {

// y = x @ Wa, written as torch's batch_first attention writes it (transpose, project, transpose
// back) or directly. Same input, same weight: the rows are only visited in another order.
Graph ProjectionModel(bool transposed) {
  ProtoModel m(/*opset=*/13);
  m.Input("x", onnx::TensorProto::FLOAT, {"batch", 4, 8});
  m.Initializer("Wa", onnx::TensorProto::FLOAT, {8, 4});
  if (transposed) {
    SetInts(m.Node("Transpose", {"x"}, {"t"}), "perm", {1, 0, 2});
    m.Node("MatMul", {"t", "Wa"}, {"a"});
    SetInts(m.Node("Transpose", {"a"}, {"y"}), "perm", {1, 0, 2});
  } else {
    m.Node("MatMul", {"x", "Wa"}, {"y"});
  }
  m.Output("y", onnx::TensorProto::FLOAT, {{"batch", 4, 4}});
  return m.Import(transposed ? "transposed_projection.onnx" : "projection.onnx");
}

struct Result {
  std::vector<float> gradient;
  int copies = 0;
};

Result Train(const Graph& graph) {
  ProgramOptions options;
  options.loss = LossKind::kMse;
  auto program = DeriveTrainingProgram(graph, options);
  REQUIRE(program.ok());
  Result result;
  for (const Buffer& b : program->buffers)
    if (b.role == BufferRole::kSavedExtra && ContiguousCopyInput(b.saved_name)) ++result.copies;
  auto grads = OneMicroBatchGradients(graph, *program, /*rows=*/3, /*seed=*/5);
  if (!grads.ok()) FAIL(grads.error().message);
  REQUIRE(grads->size() == 1);
  result.gradient = grads->front();
  return result;
}

TEST_CASE("executor: a saved contiguous copy feeds matmul's backward", "[executor][views]") {
  const Result copied = Train(ProjectionModel(/*transposed=*/true));
  const Result direct = Train(ProjectionModel(/*transposed=*/false));
  CHECK(copied.copies == 1);
  CHECK(direct.copies == 0);
  REQUIRE(copied.gradient.size() == direct.gradient.size());
  // fp32 sums over the same 12 rows in another order: ~1e-7 relative; 1e-5 leaves margin.
  double diff = 0.0;
  double scale = 0.0;
  for (size_t i = 0; i < direct.gradient.size(); ++i) {
    diff = std::max(diff, std::fabs(double(copied.gradient[i]) - direct.gradient[i]));
    scale = std::max(scale, std::fabs(double(direct.gradient[i])));
  }
  CHECK(scale > 1e-6);  // a gradient that is not trivially zero
  CHECK(diff <= 1e-5 * scale);
}

}  // namespace
}  // namespace memplan::testing
