// The Liger set on the converted Hugging Face graphs (tests/fixtures/hf_converted: dynamo, opset
// 18, transformers' tiny configs in tests/fixtures/hf_configs). Counts follow from the configs: 2
// decoder layers, each with one gated MLP and two RMSNorms, and the final norm. Llama's MLP is
// silu(gate) * up (LigerSwiGLUMLP), Gemma's gelu_pytorch_tanh(gate) * up (LigerGEGLUMLP).

#include <catch2/catch.hpp>

#include <onnx/onnx_pb.h>

#include <fstream>
#include <map>
#include <string>

#include "graph/fusion/fusion_table.h"
#include "tests/test_paths.h"

namespace memplan {
namespace {

onnx::ModelProto LoadConverted(const std::string& family) {
  const std::string path = memplan::testing::FixturesDir() + "/hf_converted/" + family + ".onnx";
  std::ifstream in(path, std::ios::binary);
  onnx::ModelProto model;
  REQUIRE(model.ParseFromIstream(&in));
  return model;
}

int CountOps(const onnx::ModelProto& model, const std::string& op_type) {
  int count = 0;
  for (const auto& node : model.graph().node()) count += node.op_type() == op_type ? 1 : 0;
  return count;
}

TEST_CASE("the Liger set fuses each converted HF decoder's gated MLPs", "[import][fusion][geglu]") {
  SECTION("Llama: two SwiGLU MLPs") {
    onnx::ModelProto model = LoadConverted("llama");
    const FusionCounts counts = FuseImportPatterns(model, FusionSet::kLiger);
    CHECK(counts.by_entry.at("swiglu") == 2);
    CHECK(counts.by_entry.at("rms_norm") == 5);
    CHECK(counts.by_entry.count("geglu") == 0);
    CHECK(CountOps(model, "SwiGlu") == 2);
  }
  SECTION("Gemma: two GeGLU MLPs, whose tanh GELUs the dynamo exporter decomposed") {
    onnx::ModelProto model = LoadConverted("gemma");
    const FusionCounts counts = FuseImportPatterns(model, FusionSet::kLiger);
    CHECK(counts.by_entry.at("tanh_gelu_torchlib") == 2);
    CHECK(counts.by_entry.at("geglu") == 2);
    CHECK(counts.by_entry.at("rms_norm") == 5);  // the scale is 1 + w (GemmaRMSNorm)
    CHECK(counts.by_entry.count("swiglu") == 0);
    CHECK(CountOps(model, "GeGlu") == 2);
    CHECK(CountOps(model, "Gelu") == 0);
    CHECK(CountOps(model, "Tanh") == 0);
  }
  SECTION("the default set leaves Gemma's gate for eager's product") {
    onnx::ModelProto model = LoadConverted("gemma");
    const FusionCounts counts = FuseImportPatterns(model, FusionSet::kFusedOps);
    CHECK(counts.by_entry.at("tanh_gelu_torchlib") == 2);
    CHECK(CountOps(model, "Gelu") == 2);
    CHECK(CountOps(model, "GeGlu") == 0);
  }
}

}  // namespace
}  // namespace memplan
