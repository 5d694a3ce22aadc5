#include <catch2/catch.hpp>

#include "analyzer/cost/cost_model.h"
#include "tests/graph/hand_built_graph.h"

namespace memplan {
namespace {

// A GPU with round numbers so the expected times are easy to derive by hand.
GpuSpec RoundGpu() {
  GpuSpec gpu;
  gpu.name = "round";
  gpu.memory_bytes = int64_t{16} << 30;
  gpu.fp32_flops_per_second = 10e12;   // 10 TFLOPS
  gpu.tf32_flops_per_second = 50e12;   // 50 TFLOPS
  gpu.fp16_flops_per_second = 100e12;  // 100 TFLOPS
  gpu.memory_bytes_per_second = 1e12;  // 1 TB/s
  gpu.supports_bf16 = true;
  return gpu;
}

// The pure roofline: no efficiency derating, a 5 us launch.
CostModelOptions PureRoofline() {
  CostModelOptions options;
  options.compute_efficiency = 1.0;
  options.bandwidth_efficiency = 1.0;
  options.kernel_launch_seconds = 5e-6;
  return options;
}

using testing::NewValue;

// A node named "<op_type>_<n>", as the importer names a node the file leaves unnamed.
NodeId AddOp(Graph& g, const std::string& op_type, std::vector<ValueId> inputs,
             std::vector<ValueId> outputs, const std::string& domain = "") {
  return testing::NewNode(g, op_type + "_" + std::to_string(g.num_nodes()), op_type,
                          std::move(inputs), std::move(outputs), /*attributes=*/{}, domain);
}

// y = MatMul(x, w) with x an input [rows, 1024] and w a parameter [1024, 1024]; rows is 1024
// or, given a name, a symbol of that name.
struct MatMulGraph {
  Graph graph;
  NodeId matmul;
};
MatMulGraph MakeMatMulGraph(const std::string& rows_symbol = "") {
  MatMulGraph m;
  Graph& g = m.graph;
  Dim rows = rows_symbol.empty() ? Dim(1024) : Dim::Symbol(g.symbols().Intern(rows_symbol));
  ValueId x = NewValue(g, "x", Shape{{rows, 1024}}, ValueKind::kInput);
  g.MarkInput(x);
  ValueId w = NewValue(g, "w", Shape{{1024, 1024}}, ValueKind::kParameter);
  ValueId y = NewValue(g, "y", Shape{{rows, 1024}}, ValueKind::kIntermediate);
  m.matmul = AddOp(g, "MatMul", {x, w}, {y});
  g.MarkOutput(y);
  return m;
}

TEST_CASE("roofline: a 1024^3 fp32 MatMul is compute bound", "[cost_model]") {
  // 2*M*N*K = 2 * 2^30 = 2147483648 flops at 10 TFLOPS = 214.7483648 us;
  // bytes: three 1024x1024 fp32 matrices = 3 * 4 MiB = 12582912 B at 1 TB/s = 12.58 us.
  double seconds = RooflineSeconds(2147483648.0, 12582912.0, 10e12, RoundGpu(), PureRoofline());
  CHECK(seconds == Approx(214.7483648e-6 + 5e-6));
}

TEST_CASE("node times: MatMul forward and backward from the registry", "[cost_model]") {
  MatMulGraph m = MakeMatMulGraph();
  Bindings none(&m.graph.symbols());
  GpuSpec gpu = RoundGpu();

  SECTION("fp32 on CUDA cores") {
    auto times = EstimateNodeTimes(m.graph, gpu, none, {}, PureRoofline());
    REQUIRE(times.ok());
    const NodeTime& t = (*times)[m.matmul.index()];
    CHECK(t.forward_flops == 2147483648.0);
    CHECK(t.forward_bytes == 12582912.0);
    CHECK(t.compute_bound);
    // Forward: 2^31 / 10e12 + 5 us = 219.7483648 us.
    CHECK(t.forward_seconds == Approx(219.7483648e-6));
    // Backward (factor 2, two GEMMs dX and dW): 2^32 / 10e12 = 429.4967296 us + 2 launches.
    CHECK(t.backward_seconds == Approx(439.4967296e-6));
  }
  SECTION("fp32 on TF32 tensor cores when enabled") {
    CostModelOptions options = PureRoofline();
    options.fp32_uses_tf32 = true;
    auto times = EstimateNodeTimes(m.graph, gpu, none, {}, options);
    REQUIRE(times.ok());
    // 2^31 / 50e12 = 42.94967296 us + 5 us.
    CHECK((*times)[m.matmul.index()].forward_seconds == Approx(47.94967296e-6));
  }
  SECTION("fp16 on tensor cores moves half the bytes") {
    auto times = EstimateNodeTimes(m.graph, gpu, none, {DType::kFloat16}, PureRoofline());
    REQUIRE(times.ok());
    const NodeTime& t = (*times)[m.matmul.index()];
    CHECK(t.forward_bytes == 6291456.0);  // 3 * 1024*1024 * 2 bytes
    // 2^31 / 100e12 = 21.47483648 us (bytes: 6.29 us) + 5 us.
    CHECK(t.forward_seconds == Approx(26.47483648e-6));
  }
  SECTION("bf16 on a GPU without bf16 tensor cores runs at the fp32 rate") {
    gpu.supports_bf16 = false;
    auto times = EstimateNodeTimes(m.graph, gpu, none, {DType::kBFloat16}, PureRoofline());
    REQUIRE(times.ok());
    // 2^31 / 10e12 + 5 us, as fp32.
    CHECK((*times)[m.matmul.index()].forward_seconds == Approx(219.7483648e-6));
  }
  SECTION("efficiency derates the peak") {
    CostModelOptions options = PureRoofline();
    options.compute_efficiency = 0.5;
    auto times = EstimateNodeTimes(m.graph, gpu, none, {}, options);
    REQUIRE(times.ok());
    // 2^31 / (0.5 * 10e12) = 429.4967296 us + 5 us.
    CHECK((*times)[m.matmul.index()].forward_seconds == Approx(434.4967296e-6));
  }
}

TEST_CASE("node times: symbolic rows evaluate under bindings, unbound is an error",
          "[cost_model]") {
  MatMulGraph sym = MakeMatMulGraph("batch");  // x = [batch, 1024]

  Bindings unbound(&sym.graph.symbols());
  auto missing = EstimateNodeTimes(sym.graph, RoundGpu(), unbound, {}, PureRoofline());
  REQUIRE_FALSE(missing.ok());
  CHECK(missing.error().message.find("'batch' is not bound") != std::string::npos);

  Bindings bound(&sym.graph.symbols());
  bound.Bind(*sym.graph.symbols().Find("batch"), 2048);
  auto times = EstimateNodeTimes(sym.graph, RoundGpu(), bound, {}, PureRoofline());
  REQUIRE(times.ok());
  // 2 * 2048 * 1024 * 1024 = 2^32 flops: 429.4967296 us + 5 us.
  CHECK((*times)[sym.matmul.index()].forward_flops == 4294967296.0);
  CHECK((*times)[sym.matmul.index()].forward_seconds == Approx(434.4967296e-6));
}

TEST_CASE("node times: memory-bound ops, no backward off the gradient path", "[cost_model]") {
  // An op the registry does not know gets the conservative default cost: flops = output
  // elements, bytes = inputs + outputs, backward factor 2.
  Graph g;
  ValueId x = NewValue(g, "x", Shape{{1024, 1024}}, ValueKind::kInput);
  g.MarkInput(x);
  ValueId w = NewValue(g, "w", Shape{{1024, 1024}}, ValueKind::kParameter);
  ValueId a = NewValue(g, "a", Shape{{1024, 1024}}, ValueKind::kIntermediate);
  ValueId b = NewValue(g, "b", Shape{{1024, 1024}}, ValueKind::kIntermediate);
  NodeId on_input = AddOp(g, "Scramble", {x}, {a}, "test.custom");
  NodeId on_weight = AddOp(g, "Scramble", {w}, {b}, "test.custom");
  Bindings none(&g.symbols());
  auto times = EstimateNodeTimes(g, RoundGpu(), none, {}, PureRoofline());
  REQUIRE(times.ok());
  // 2^20 flops (0.1 us) vs 2 * 4 MiB = 8388608 B at 1 TB/s = 8.388608 us: memory bound.
  const NodeTime& t = (*times)[on_input.index()];
  CHECK_FALSE(t.compute_bound);
  CHECK(t.forward_seconds == Approx(8.388608e-6 + 5e-6));
  CHECK(t.backward_seconds == 0.0);  // x is data: nothing upstream needs a gradient
  // On the weight: backward = 2 x the bytes (16.777216 us) + 2 launches.
  CHECK((*times)[on_weight.index()].backward_seconds == Approx(16.777216e-6 + 10e-6));
}

TEST_CASE("node times: shape arithmetic runs no kernel", "[cost_model]") {
  Graph g;
  ValueId x = NewValue(g, "x", Shape{{4}}, ValueKind::kConstant, DType::kInt64);
  ValueId y = NewValue(g, "y", Shape{{4}}, ValueKind::kConstant, DType::kInt64);
  NodeId n = AddOp(g, "Scramble", {x}, {y}, "test.custom");
  Bindings none(&g.symbols());
  auto times = EstimateNodeTimes(g, RoundGpu(), none, {}, PureRoofline());
  REQUIRE(times.ok());
  CHECK((*times)[n.index()].forward_seconds == 0.0);
}

TEST_CASE("step time: k micro-batches, recompute, accumulation and optimizer", "[cost_model]") {
  std::vector<NodeTime> nodes(3);
  nodes[0].forward_seconds = 1e-3;
  nodes[0].backward_seconds = 2e-3;
  nodes[1].forward_seconds = 3e-3;
  nodes[1].backward_seconds = 6e-3;
  nodes[2].forward_seconds = 0.5e-3;  // no backward
  StepCostInputs inputs;
  inputs.accumulation_steps = 4;
  inputs.recomputed_nodes = {NodeId(1)};
  inputs.gradient_bytes = 1'000'000'000;   // 1 GB of gradients
  inputs.optimizer_bytes = 5'000'000'000;  // e.g. SGD+momentum: 5 x 4 B per parameter, 250M params
  inputs.optimizer_kernels = 2;
  StepTimeEstimate e = EstimateStepTime(nodes, inputs, RoundGpu(), PureRoofline());
  CHECK(e.forward_seconds == Approx(4.5e-3));
  CHECK(e.backward_seconds == Approx(8e-3));
  CHECK(e.recompute_seconds == Approx(3e-3));
  // Accumulating 1 GB of gradients: read 2 GB, write 1 GB = 3 ms at 1 TB/s, + 5 us; done k-1 = 3
  // times.
  CHECK(e.accumulation_seconds == Approx(3 * 3.005e-3));
  // 5 GB at 1 TB/s = 5 ms, + 2 launches.
  CHECK(e.optimizer_seconds == Approx(5.01e-3));
  // 4 * (4.5 + 8 + 3) ms + 9.015 ms + 5.01 ms = 62 + 14.025 = 76.025 ms.
  CHECK(e.step_seconds == Approx(76.025e-3));

  inputs.accumulation_steps = 1;
  inputs.recomputed_nodes.clear();
  StepTimeEstimate single = EstimateStepTime(nodes, inputs, RoundGpu(), PureRoofline());
  CHECK(single.accumulation_seconds == 0.0);
  CHECK(single.step_seconds == Approx(12.5e-3 + 5.01e-3));
}

}  // namespace
}  // namespace memplan
