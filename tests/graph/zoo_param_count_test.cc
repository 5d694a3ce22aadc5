// The zoo models (written by memplan-zoo at build time into MEMPLAN_ZOO_DIR) reproduce the
// published parameter counts of their reference implementations. The models are read here with
// the ONNX protobuf API directly, independent of memplan's importer.

#include <catch2/catch.hpp>

#include <algorithm>
#include <fstream>
#include <map>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include <onnx/onnx_pb.h>
#include "tests/test_paths.h"

namespace {

struct Published {
  std::string model;
  int64_t parameters;  // sum of p.numel() over parameters(): tied weights once, buffers excluded
};

// Sources: torchvision model docs ("num_params") for resnet18/resnet50/vit_b_16; for the
// transformers, the counts of HF BertModel / GPT2LMHeadModel, derived here by hand.
const std::vector<Published>& PublishedCounts() {
  static const std::vector<Published> counts = {
      // (784*1024 + 1024) + (1024*1024 + 1024) + (1024*10 + 10)
      {"mlp", 1'863'690},
      {"resnet18", 11'689'512},
      {"resnet50", 25'557'032},
      // embeddings 30522*768 + 512*768 + 2*768 + LN 2*768 = 23,837,184;
      // per layer 4*(768*768+768) + 2*768 + (768*3072+3072) + (3072*768+768) + 2*768
      //         = 7,087,872, x12 = 85,054,464; pooler 768*768+768 = 590,592.
      {"bert_base", 109'482'240},
      // wte 50257*768 = 38,597,376 (the LM head reuses it); wpe 1024*768 = 786,432;
      // per layer 7,087,872 (as BERT's), x12 = 85,054,464; ln_f 1,536.
      {"gpt2_small", 124'439'808},
      // wte+wpe (50257+1024)*1600 = 82,049,600; per layer 4*1600 + (1600*4800+4800)
      // + (1600*1600+1600) + (1600*6400+6400) + (6400*1600+1600) = 30,740,800, x48; ln_f 3,200.
      {"gpt2_xl", 1'557'611'200},
      // conv_proj 768*3*16*16+768 = 590,592; class token 768; pos 197*768 = 151,296;
      // 12 x 7,087,872; encoder.ln 1,536; head 768*1000+1000 = 769,000.
      {"vit_b16", 86'567'656},
      // embed_tokens and the untied lm_head 128256*4096 = 525,336,576 each; per layer
      // q, o 4096*4096, k, v 4096*1024, gate, up, down 4096*14336, two norms 4096:
      // 218,112,000, x32; final norm 4,096.
      {"llama3_8b", 8'030'261'248},
      // the same decoder with vocab 32000: 2 * 131,072,000 + 32 * 218,112,000 + 4,096.
      {"mistral_7b", 7'241'732'096},
  };
  return counts;
}

std::string ZooPath(const std::string& model) {
  return memplan::testing::ZooDir() + "/" + model + ".onnx";
}

onnx::ModelProto LoadZooModel(const std::string& model) {
  const std::string path = ZooPath(model);
  INFO("reading " << path << " (written by the zoo_models target)");
  std::ifstream in(path, std::ios::binary);
  REQUIRE(in.good());
  onnx::ModelProto proto;
  REQUIRE(proto.ParseFromIstream(&in));
  return proto;
}

bool IsFloating(int32_t type) {
  return type == onnx::TensorProto::FLOAT || type == onnx::TensorProto::FLOAT16 ||
         type == onnx::TensorProto::BFLOAT16 || type == onnx::TensorProto::DOUBLE;
}

int64_t NumElements(const onnx::TensorProto& tensor) {
  int64_t n = 1;
  for (int64_t d : tensor.dims()) n *= d;
  return n;
}

// Initializers that BatchNormalization reads as its running mean and variance (inputs 3, 4):
// buffers, not parameters.
std::set<std::string> RunningStatistics(const onnx::GraphProto& graph) {
  std::set<std::string> names;
  for (const auto& node : graph.node()) {
    if (node.op_type() != "BatchNormalization") continue;
    for (int i = 3; i < std::min(node.input_size(), 5); ++i) names.insert(node.input(i));
  }
  return names;
}

int64_t TrainableParameters(const onnx::GraphProto& graph) {
  const std::set<std::string> buffers = RunningStatistics(graph);
  int64_t total = 0;
  for (const auto& tensor : graph.initializer()) {
    if (IsFloating(tensor.data_type()) && !buffers.count(tensor.name())) {
      total += NumElements(tensor);
    }
  }
  return total;
}

std::map<std::string, std::string> ExternalEntries(const onnx::TensorProto& tensor) {
  std::map<std::string, std::string> entries;
  for (const auto& entry : tensor.external_data()) entries[entry.key()] = entry.value();
  return entries;
}

}  // namespace

TEST_CASE("zoo models reproduce the published trainable parameter counts", "[zoo]") {
  for (const Published& published : PublishedCounts()) {
    INFO(published.model);
    const onnx::ModelProto model = LoadZooModel(published.model);
    CHECK(TrainableParameters(model.graph()) == published.parameters);
  }
}

TEST_CASE("zoo BatchNorm running statistics are named buffers", "[zoo]") {
  const onnx::ModelProto model = LoadZooModel("resnet18");
  const std::set<std::string> buffers = RunningStatistics(model.graph());
  int64_t buffer_elements = 0;
  for (const auto& tensor : model.graph().initializer()) {
    if (!buffers.count(tensor.name())) continue;
    INFO(tensor.name());
    const std::string& name = tensor.name();
    const bool named_as_buffer = name.ends_with(".running_mean") || name.ends_with(".running_var");
    CHECK(named_as_buffer);
    CHECK(tensor.data_type() == onnx::TensorProto::FLOAT);
    buffer_elements += NumElements(tensor);
  }
  // BatchNorm channels: bn1 64; layer1 4x64; layer2 4x128 + downsample 128; layer3 5x256;
  // layer4 5x512 = 4,800; mean and var each: 9,600 (torchvision's resnet18 has 9,620 buffer
  // elements, the other 20 being the int64 num_batches_tracked scalars ONNX does not carry).
  CHECK(buffer_elements == 9'600);
  // Everything else that is floating is a parameter named after its module.
  for (const auto& tensor : model.graph().initializer()) {
    if (buffers.count(tensor.name())) continue;
    INFO(tensor.name());
    CHECK((tensor.name().ends_with(".weight") || tensor.name().ends_with(".bias")));
  }
}

TEST_CASE("zoo initializers are external data, laid out without overlap", "[zoo]") {
  for (const Published& published : PublishedCounts()) {
    INFO(published.model);
    const onnx::ModelProto model = LoadZooModel(published.model);
    std::vector<std::pair<int64_t, int64_t>> ranges;  // [offset, offset + length)
    for (const auto& tensor : model.graph().initializer()) {
      INFO(tensor.name());
      REQUIRE(tensor.data_location() == onnx::TensorProto::EXTERNAL);
      CHECK(tensor.raw_data().empty());
      auto entries = ExternalEntries(tensor);
      CHECK(entries["location"] == published.model + ".onnx.data");
      const int64_t element_size = tensor.data_type() == onnx::TensorProto::BOOL ? 1 : 4;
      const int64_t length = std::stoll(entries.at("length"));
      CHECK(length == NumElements(tensor) * element_size);
      ranges.emplace_back(std::stoll(entries.at("offset")),
                          std::stoll(entries.at("offset")) + length);
    }
    std::sort(ranges.begin(), ranges.end());
    for (size_t i = 1; i < ranges.size(); ++i) CHECK(ranges[i - 1].second <= ranges[i].first);
  }
}

TEST_CASE("zoo models are opset 17 with a symbolic batch (and sequence)", "[zoo]") {
  for (const Published& published : PublishedCounts()) {
    INFO(published.model);
    const onnx::ModelProto model = LoadZooModel(published.model);
    CHECK(model.ir_version() == 8);
    REQUIRE(model.opset_import_size() == 1);
    CHECK(model.opset_import(0).version() == 17);
    for (const auto& input : model.graph().input()) {
      INFO(input.name());
      const auto& shape = input.type().tensor_type().shape();
      REQUIRE(shape.dim_size() >= 2);
      CHECK(shape.dim(0).dim_param() == "batch");
      const bool token_input = input.type().tensor_type().elem_type() == onnx::TensorProto::INT64;
      if (token_input) CHECK(shape.dim(1).dim_param() == "seq");
    }
  }
}

TEST_CASE("gpt2 ties its LM head to the token embedding", "[zoo]") {
  const onnx::ModelProto model = LoadZooModel("gpt2_small");
  std::vector<std::string> consumers;
  for (const auto& node : model.graph().node()) {
    for (const auto& input : node.input()) {
      if (input == "wte.weight") consumers.push_back(node.op_type());
    }
  }
  // The embedding lookup and the head's transpose read the one initializer.
  CHECK(consumers == std::vector<std::string>{"Gather", "Transpose"});
}

TEST_CASE("llama3_8b: untied head, grouped-query K/V, no floating buffers", "[zoo]") {
  const onnx::ModelProto model = LoadZooModel("llama3_8b");
  std::map<std::string, std::vector<int64_t>> dims;
  for (const auto& tensor : model.graph().initializer()) {
    dims[tensor.name()] = {tensor.dims().begin(), tensor.dims().end()};
    // Rotary tables and the causal mask are computed (Constant inv_freq), not initializers, so
    // every floating initializer is a parameter of PyTorch's parameters().
    INFO(tensor.name());
    CHECK(tensor.name().ends_with(".weight"));
  }
  CHECK(dims.at("model.embed_tokens.weight") == std::vector<int64_t>{128256, 4096});
  CHECK(dims.at("lm_head.weight") == std::vector<int64_t>{4096, 128256});
  // 8 KV heads of 128: k_proj and v_proj map 4096 -> 1024; stored [in, out] for MatMul.
  CHECK(dims.at("model.layers.31.self_attn.k_proj.weight") == std::vector<int64_t>{4096, 1024});
  CHECK(dims.at("model.layers.31.self_attn.v_proj.weight") == std::vector<int64_t>{4096, 1024});
  CHECK(dims.at("model.layers.0.mlp.down_proj.weight") == std::vector<int64_t>{14336, 4096});
  CHECK(dims.size() == 2 + 32 * 9 + 1);
}
