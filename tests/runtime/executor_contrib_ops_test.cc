// The executor runs ONNX Runtime's fused com.microsoft ops (SkipLayerNormalization,
// SkipSimplifiedLayerNormalization, BiasGelu) from what the registry saves, and trains the same
// parameter gradients as the default-domain ops they fuse.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "tests/graph/proto_model.h"
#include "tests/runtime/executor_test_support.h"

namespace memplan {
namespace {

using testing::ProtoModel;

void SetFloat(onnx::NodeProto& n, const std::string& name, float v) {
  auto* a = n.add_attribute();
  a->set_name(name);
  a->set_type(onnx::AttributeProto::FLOAT);
  a->set_f(v);
}

enum class Form { kSkipLayerNorm, kSkipRmsNorm, kBiasGelu };

// h = x @ W, then the fused op on (h, residual x) or its default-domain decomposition. The norms
// feed their input_skip_bias_sum output on (out = y + sum) so its gradient flows back too.
Graph Model(Form form, bool fused) {
  ProtoModel m(/*opset=*/17);
  m.Opset("com.microsoft", 1);
  m.Input("x", onnx::TensorProto::FLOAT, {"batch", 4, 8});
  m.Initializer("W", onnx::TensorProto::FLOAT, {8, 8});
  m.Initializer("bias", onnx::TensorProto::FLOAT, {8});
  m.Node("MatMul", {"x", "W"}, {"h"});
  if (form == Form::kBiasGelu) {
    if (fused) {
      m.Node("BiasGelu", {"h", "bias"}, {"out"}, "com.microsoft");
    } else {
      m.Node("Add", {"h", "bias"}, {"s"});
      m.Node("Gelu", {"s"}, {"out"}, "com.microsoft");
    }
  } else {
    const bool layer = form == Form::kSkipLayerNorm;
    m.Initializer("gamma", onnx::TensorProto::FLOAT, {8});
    if (layer) m.Initializer("beta", onnx::TensorProto::FLOAT, {8});
    if (fused) {
      std::vector<std::string> inputs = {"h", "x", "gamma"};
      if (layer) inputs.push_back("beta");
      inputs.push_back("bias");
      SetFloat(m.Node(layer ? "SkipLayerNormalization" : "SkipSimplifiedLayerNormalization", inputs,
                      {"y", "", "", "s"}, "com.microsoft"),
               "epsilon", 1e-5f);
    } else {
      m.Node("Add", {"h", "x"}, {"hx"});
      m.Node("Add", {"hx", "bias"}, {"s"});
      std::vector<std::string> inputs = {"s", "gamma"};
      if (layer) inputs.push_back("beta");
      SetFloat(m.Node(layer ? "LayerNormalization" : "SimplifiedLayerNormalization", inputs, {"y"}),
               "epsilon", 1e-5f);
    }
    m.Node("Add", {"y", "s"}, {"out"});
  }
  m.Output("out", onnx::TensorProto::FLOAT, {{"batch", 4, 8}});
  return m.Import(fused ? "fused.onnx" : "decomposed.onnx");
}

std::vector<std::vector<float>> Gradients(const Graph& graph) {
  ProgramOptions options;
  options.loss = LossKind::kMse;
  auto program = DeriveTrainingProgram(graph, options);
  if (!program.ok()) FAIL(program.error().message);
  auto grads = testing::OneMicroBatchGradients(graph, *program, /*rows=*/3, /*seed=*/7);
  if (!grads.ok()) FAIL(grads.error().message);
  return *grads;
}

TEST_CASE("executor: ORT's fused contrib ops train as the ops they fuse", "[executor][contrib]") {
  for (Form form : {Form::kSkipLayerNorm, Form::kSkipRmsNorm, Form::kBiasGelu}) {
    INFO("form " << static_cast<int>(form));
    const auto fused = Gradients(Model(form, /*fused=*/true));
    const auto decomposed = Gradients(Model(form, /*fused=*/false));
    REQUIRE(fused.size() == decomposed.size());
    REQUIRE(fused.size() == (form == Form::kSkipLayerNorm ? 4u
                             : form == Form::kSkipRmsNorm ? 3u
                                                          : 2u));
    for (size_t p = 0; p < fused.size(); ++p) {
      INFO("parameter " << p);
      REQUIRE(fused[p].size() == decomposed[p].size());
      // fp32 sums in another order: 1e-5 of the gradient's scale leaves margin.
      double diff = 0.0, scale = 0.0;
      for (size_t i = 0; i < fused[p].size(); ++i) {
        diff = std::max(diff, std::fabs(double(fused[p][i]) - decomposed[p][i]));
        scale = std::max(scale, std::fabs(double(decomposed[p][i])));
      }
      CHECK(scale > 1e-6);
      CHECK(diff <= 1e-5 * scale);
    }
  }
}

}  // namespace
}  // namespace memplan
