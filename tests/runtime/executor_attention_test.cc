// --attention sdpa on the CPU backend: the fused node's reference kernel trains the exported
// models to the same gradients as their eager attention sub-graphs, up to float rounding (the
// sums run in another order: bounded error, not bitwise), while keeping fewer bytes.

#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>

#include "analyzer/derivation/attention_plan.h"
#include "tests/runtime/executor_test_support.h"

namespace memplan {
namespace {

using testing::BindAllSymbols;
using testing::LoadFixture;

struct Run {
  std::vector<std::vector<float>> gradients;
  int64_t saved_bytes = 0;  // the simulator's, per micro-batch
};

// One micro-batch of 2 samples at seq 8, fp32, dropout off: parameter gradients and saved bytes.
Run Execute(const Graph& graph) {
  auto program = DeriveTrainingProgram(graph, ProgramOptions());
  REQUIRE(program.ok());
  const Bindings bindings = BindAllSymbols(*program, /*batch=*/2, /*other=*/8);
  ExactAllocator exact;
  auto simulated = Simulate(*program, bindings, exact);
  REQUIRE(simulated.ok());
  ExecutorOptions eo;
  eo.disable_dropout = true;
  auto grads = testing::OneMicroBatchGradients(graph, *program, /*rows=*/2, /*seed=*/3,
                                               /*other=*/8, eo);
  if (!grads.ok()) FAIL(grads.error().message);
  return {*grads, simulated->saved_activation_bytes};
}

TEST_CASE("executor: sdpa gradients equal eager attention's within float rounding",
          "[executor][numerics][attention]") {
  for (const char* file : {"gpt_opset13.onnx", "gpt_opset17.onnx", "transformer_opset17.onnx"}) {
    DYNAMIC_SECTION(file) {
      const Graph eager_graph = LoadFixture(file);
      Graph sdpa_graph = LoadFixture(file);
      auto plan = ApplyAttentionMode(sdpa_graph, AttentionMode::kSdpa, file);
      REQUIRE(plan.ok());
      REQUIRE_FALSE(plan->fused.empty());
      const Run eager = Execute(eager_graph);
      const Run sdpa = Execute(sdpa_graph);
      // The parameters are the same values in the same order (initialised by name).
      REQUIRE(eager.gradients.size() == sdpa.gradients.size());
      // Norm-relative error per parameter: fp32 sums in a different order differ by ~1e-7
      // relative per operation; 1e-4 leaves room for a few layers, a wrong gradient is O(1).
      double worst = 0.0, norm = 0.0;
      for (size_t p = 0; p < eager.gradients.size(); ++p) {
        REQUIRE(eager.gradients[p].size() == sdpa.gradients[p].size());
        double diff = 0.0, scale = 0.0;
        for (size_t i = 0; i < eager.gradients[p].size(); ++i) {
          diff = std::max(diff, std::fabs(double(eager.gradients[p][i]) - sdpa.gradients[p][i]));
          scale = std::max(scale, std::fabs(double(eager.gradients[p][i])));
          norm += double(eager.gradients[p][i]) * eager.gradients[p][i];
        }
        if (diff > 0) worst = std::max(worst, diff / scale);
      }
      INFO("max relative error " << worst);
      CHECK(worst <= 1e-4);
      CHECK(norm > 1e-12);  // the check can fail: the gradients are not all zero
      CHECK(sdpa.saved_bytes < eager.saved_bytes);
    }
  }
}

}  // namespace
}  // namespace memplan
