// Imports the PyTorch exports of tests/fixtures/make_torch_fixtures.py (training mode, dynamic
// batch/seq, opsets 13 and 17, weights as external data that is NOT checked in) and checks
// parameter counts against the onnx package's count and symbolic activation shapes.

#include <catch2/catch.hpp>

#include <fstream>
#include <nlohmann/json.hpp>

#include "tests/graph/import_test_util.h"

namespace memplan {
namespace {

using testing::ImportFixture;
using testing::ParameterCount;
using testing::ShapeOf;

nlohmann::json ExpectedNumbers(const std::string& name) {
  std::ifstream in(testing::Fixture(name + ".expected.json"));
  REQUIRE(in.good());
  return nlohmann::json::parse(in);
}

// Every floating activation has a known shape, and the only symbols are the exported dynamic
// axes (no fresh `unk_*`/`reshape_*` symbols were needed anywhere).
void RequireAllShapesSymbolic(const Graph& g, const std::vector<std::string>& symbols) {
  REQUIRE(g.symbols().size() == symbols.size());
  for (const auto& s : symbols) CHECK(g.symbols().Find(s).has_value());
  int64_t activations = 0;
  for (const Value& v : g.values()) {
    if (v.kind != ValueKind::kIntermediate) continue;
    INFO("value " << v.name);
    CHECK(v.dtype != DType::kUndefined);
    CHECK(v.shape.known);
    ++activations;
  }
  CHECK(activations > 50);
  for (const auto& w : g.warnings) CHECK(w.find("unknown") == std::string::npos);
}

// Output shapes of all nodes of one op type, in node order.
std::vector<std::string> OutputShapes(const Graph& g, const std::string& op_type,
                                      size_t output = 0) {
  std::vector<std::string> shapes;
  for (const Node& n : g.nodes())
    if (n.op_type == op_type)
      shapes.push_back(g.value(n.outputs.at(output)).shape.ToString(g.symbols()));
  return shapes;
}

TEST_CASE("torch fixtures: parameter counts match the onnx package", "[import]") {
  for (const char* name :
       {"resnet18_opset13", "resnet18_opset17", "transformer_opset13", "transformer_opset17",
        "gpt_opset13", "gpt_opset17", "resnet18_functions_opset17", "gpt_functions_opset17"}) {
    INFO(name);
    nlohmann::json expected = ExpectedNumbers(name);
    Graph g = ImportFixture(std::string(name) + ".onnx");
    CHECK(g.opset_imports.at("") == expected["opset"].get<int64_t>());
    CHECK(g.producer_name == "pytorch");
    CHECK(ParameterCount(g) == expected["onnx_parameter_count"].get<int64_t>());
  }
  // The initializers include buffers torch does not count as parameters:
  //  resnet18: BatchNorm running mean+var, 2 * (64 + 4*64 + 4*128+128 + 4*256+256 + 4*512+512)
  //            = 2 * 4800 = 9600;
  //  gpt: the causal mask buffer [1, 1, 32, 32] in each of 2 layers = 2 * 1024 = 2048.
  CHECK(ExpectedNumbers("resnet18_opset13")["onnx_parameter_count"].get<int64_t>() -
            ExpectedNumbers("resnet18_opset13")["torch_parameter_count"].get<int64_t>() ==
        9600);
  CHECK(ExpectedNumbers("gpt_opset17")["onnx_parameter_count"].get<int64_t>() -
            ExpectedNumbers("gpt_opset17")["torch_parameter_count"].get<int64_t>() ==
        2048);
  // memplan's trainable count (floating initializers a gradient reaches) equals torch's own
  // sum(p.numel() for p in model.parameters()) for every fixture: buffers are told apart.
  for (const char* name :
       {"resnet18_opset13", "resnet18_opset17", "gpt_opset13", "gpt_opset17", "transformer_opset13",
        "transformer_opset17", "resnet18_functions_opset17", "gpt_functions_opset17"}) {
    INFO(name);
    Graph g = ImportFixture(std::string(name) + ".onnx");
    int64_t trainable = 0;
    for (const Value& v : g.values())
      if (v.kind == ValueKind::kParameter && v.trainable)
        trainable += *v.shape.NumElements().constant_value();
    CHECK(trainable == ExpectedNumbers(name)["torch_parameter_count"].get<int64_t>());
  }
  // nn.TransformerEncoder has no buffers.
  CHECK(ExpectedNumbers("transformer_opset13")["onnx_parameter_count"] ==
        ExpectedNumbers("transformer_opset13")["torch_parameter_count"]);
}

TEST_CASE("GPT fixture: every activation is known in terms of batch and seq", "[import][folding]") {
  for (const char* name : {"gpt_opset13.onnx", "gpt_opset17.onnx"}) {
    INFO(name);
    Graph g = ImportFixture(name);
    RequireAllShapesSymbolic(g, {"batch", "seq"});
    REQUIRE(g.batch_symbol().has_value());
    CHECK(g.symbols().Name(*g.batch_symbol()) == "batch");
    CHECK(ShapeOf(g, "tokens") == "[batch, seq]");
    // torch.arange(0, T) -> Range of length seq; the position embedding gathers [1, seq, 64].
    CHECK(OutputShapes(g, "Range") == std::vector<std::string>{"[seq]"});
    // Attention scores q @ k^T: [batch, n_head=4, seq, seq], in both layers.
    const std::vector<std::string> scores(2, "[batch, 4, seq, seq]");
    CHECK(OutputShapes(g, "Softmax") == scores);
    CHECK(OutputShapes(g, "Where") == scores);  // masked_fill
    // qkv [batch, seq, 192] split into 3 x 64; q.view(B, T, 4, 64 // 4) = [batch, seq, 4, 16].
    CHECK(OutputShapes(g, "Split", 2) == std::vector<std::string>(2, "[batch, seq, 64]"));
    auto reshapes = OutputShapes(g, "Reshape");
    REQUIRE(reshapes.size() == 8);
    CHECK(reshapes[0] == "[batch, seq, 4, 16]");
    CHECK(reshapes[3] == "[batch, seq, 64]");  // y.transpose(1, 2).view(B, T, C)
    // self.mask[:, :, :T, :T] on the [1, 1, 32, 32] buffer.
    auto slices = OutputShapes(g, "Slice");
    REQUIRE(slices.size() == 4);
    CHECK(slices[1] == "[1, 1, seq, seq]");
    // Dropout in training mode keeps its mask output.
    CHECK(OutputShapes(g, "Dropout", 1)[0] == "[batch, seq, 64]");
    CHECK(ShapeOf(g, "output") == "[batch, seq, 100]");
  }
}

TEST_CASE("Transformer fixture: every activation is known in terms of batch and seq",
          "[import][folding]") {
  for (const char* name : {"transformer_opset13.onnx", "transformer_opset17.onnx"}) {
    INFO(name);
    Graph g = ImportFixture(name);
    RequireAllShapesSymbolic(g, {"batch", "seq"});
    // nn.MultiheadAttention folds heads into the batch: q.view(T, B * 4, 16), scores bmm'd to
    // [4*batch, seq, seq].
    const std::vector<std::string> scores(2, "[4*batch, seq, seq]");
    CHECK(OutputShapes(g, "Softmax") == scores);
    auto reshapes = OutputShapes(g, "Reshape");
    REQUIRE(reshapes.size() == 10);
    CHECK(reshapes[0] == "[seq, 4*batch, 16]");
    CHECK(reshapes[3] == "[batch*seq, 64]");  // attn_output.view(T * B, E) before out_proj
    CHECK(ShapeOf(g, "output") == "[batch, seq, 10]");
    CHECK(OutputShapes(g, "Dropout").size() == 8);
  }
}

TEST_CASE("ResNet-18 fixture: conv activations in terms of batch", "[import]") {
  for (const char* name : {"resnet18_opset13.onnx", "resnet18_opset17.onnx"}) {
    INFO(name);
    Graph g = ImportFixture(name);
    RequireAllShapesSymbolic(g, {"batch"});
    auto convs = OutputShapes(g, "Conv");
    REQUIRE(convs.size() == 20);
    // 64x64 input, conv1 7x7 stride 2 pad 3: (64 + 6 - 7) / 2 + 1 = 32.
    CHECK(convs.front() == "[batch, 64, 32, 32]");
    // layer4: 512 channels at 64 / 32 = 2.
    CHECK(convs.back() == "[batch, 512, 2, 2]");
    CHECK(OutputShapes(g, "BatchNormalization").size() == 20);
    CHECK(ShapeOf(g, "output") == "[batch, 1000]");
  }
}

}  // namespace
}  // namespace memplan
