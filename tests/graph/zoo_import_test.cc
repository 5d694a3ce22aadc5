// memplan's importer on the zoo: every model imports without its weight file, its parameters
// (ValueKind::kParameter) sum to the published count, and shape propagation leaves no floating
// tensor with an unknown shape or an unresolved ("unk_") dimension.

#include <catch2/catch.hpp>

#include <string>
#include <utility>
#include <vector>

#include "graph/dtype.h"
#include "graph/graph.h"
#include "graph/onnx_import.h"
#include "tests/test_paths.h"

namespace memplan {
namespace {

struct ZooCount {
  std::string model;
  int64_t parameters;
};

// The published counts; zoo_param_count_test.cc derives each of them.
const std::vector<ZooCount>& ZooCounts() {
  static const std::vector<ZooCount> counts = {
      {"mlp", 1'863'690},         {"resnet18", 11'689'512},    {"resnet50", 25'557'032},
      {"bert_base", 109'482'240}, {"gpt2_small", 124'439'808}, {"gpt2_xl", 1'557'611'200},
      {"vit_b16", 86'567'656},
  };
  return counts;
}

Graph ImportZooModel(const std::string& model) {
  const std::string path = memplan::testing::ZooDir() + "/" + model + ".onnx";
  auto graph = ImportOnnxModel(path);
  if (!graph.ok()) FAIL("importing " << path << ": " << graph.error().message);
  return std::move(graph).value();
}

}  // namespace

TEST_CASE("zoo models import with the published parameter counts", "[zoo][import]") {
  for (const ZooCount& expected : ZooCounts()) {
    INFO(expected.model);
    const Graph graph = ImportZooModel(expected.model);
    int64_t parameters = 0;
    for (const Value& value : graph.values()) {
      // Trainable parameters only: BatchNorm running statistics are buffers (no gradient).
      if (value.kind != ValueKind::kParameter || !value.trainable) continue;
      auto n = value.shape.NumElements().constant_value();
      REQUIRE(n.has_value());
      parameters += *n;
    }
    CHECK(parameters == expected.parameters);
  }
}

TEST_CASE("zoo models import with every floating activation shape resolved", "[zoo][import]") {
  for (const ZooCount& expected : ZooCounts()) {
    INFO(expected.model);
    const Graph graph = ImportZooModel(expected.model);
    REQUIRE(graph.batch_symbol().has_value());
    CHECK(graph.symbols().Name(*graph.batch_symbol()) == "batch");
    int unresolved = 0;
    for (const Value& value : graph.values()) {
      if (value.kind != ValueKind::kIntermediate || !IsFloating(value.dtype)) continue;
      const std::string shape = value.shape.ToString(graph.symbols());
      if (!value.shape.known || shape.find("unk_") != std::string::npos) {
        // Report the first few by name; the count says how many.
        if (++unresolved <= 5) UNSCOPED_INFO(value.name << " has shape " << shape);
      }
    }
    CHECK(unresolved == 0);
  }
}

TEST_CASE("zoo activations import with their hand-derived symbolic shapes", "[zoo][import]") {
  struct Probe {
    std::string model, value, shape;
  };
  const std::vector<Probe> probes = {
      {"mlp", "/fc1/Gemm_output_0", "[batch, 1024]"},
      // 224 -> conv1/2 112 -> maxpool/2 56 -> layer2 28 -> layer3 14 -> layer4 7.
      {"resnet18", "/layer4/layer4.1/relu_1/Relu_output_0", "[batch, 512, 7, 7]"},
      {"resnet50", "/layer4/layer4.2/relu_2/Relu_output_0", "[batch, 2048, 7, 7]"},
      {"resnet50", "/fc/Gemm_output_0", "[batch, 1000]"},
      // Attention probabilities: [batch, heads, query, key].
      {"bert_base", "/encoder/layer.11/attention/self/Softmax_output_0", "[batch, 12, seq, seq]"},
      // The causal mask sliced from the [1, 1, 1024, 1024] buffer broadcasts to the scores.
      {"gpt2_small", "/h.11/attn/Where_output_0", "[batch, 12, seq, seq]"},
      {"gpt2_small", "/h.0/attn/Reshape_3_output_0", "[batch, seq, 768]"},
      {"gpt2_xl", "/h.47/attn/Where_output_0", "[batch, 25, seq, seq]"},
      {"gpt2_xl", "/lm_head/MatMul_output_0", "[batch, seq, 50257]"},
      // 196 patches + the class token.
      {"vit_b16", "/encoder/layers/encoder_layer_11/self_attention/Softmax_output_0",
       "[batch, 12, 197, 197]"},
  };
  for (const Probe& probe : probes) {
    INFO(probe.model << ": " << probe.value);
    const Graph graph = ImportZooModel(probe.model);
    auto id = graph.FindValue(probe.value);
    REQUIRE(id.has_value());
    CHECK(graph.value(*id).shape.ToString(graph.symbols()) == probe.shape);
  }
}

}  // namespace memplan
