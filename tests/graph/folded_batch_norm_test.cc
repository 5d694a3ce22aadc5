// RestoreFoldedBatchNorms (graph/folded_batch_norm.h): a Conv / ConvTranspose / Gemm whose
// rewriter metadata names FuseBatchNormInto* (torch.onnx dynamo export, optimize=True, of a
// BatchNorm after it) gets its BatchNormalization back, with [C] state named after the module.
#include <catch2/catch.hpp>

#include <onnx/onnx_pb.h>

#include <string>
#include <vector>

#include "graph/folded_batch_norm.h"
#include "graph/onnx_metadata.h"
#include "graph/torch_scoped_names.h"
#include "tests/graph/proto_model.h"

namespace memplan {
namespace {

using testing::ProtoModel;

// NodeProto.metadata_props is field 9 (IR 10), unknown to Debian 12's libonnx: written as the
// exporter's bytes are read.
void AddMetadata(onnx::NodeProto& node, std::string_view key, const std::string& value) {
  onnx::StringStringEntryProto e;
  e.set_key(std::string(key));
  e.set_value(value);
  node.GetReflection()->MutableUnknownFields(&node)->AddLengthDelimited(kNodeMetadataField,
                                                                        e.SerializeAsString());
}

// As the rewriter wrote it on torchvision's ResNet-18 (torch 2.15, onnxscript's optimizer).
constexpr const char* kConvRules =
    "RemoveOptionalBiasFromConv, FuseBatchNormIntoConv, RemoveOptionalBiasFromConv";

const onnx::TensorProto* FindInitializer(const onnx::GraphProto& g, const std::string& name) {
  for (const auto& t : g.initializer())
    if (t.name() == name) return &t;
  return nullptr;
}

std::vector<std::string> OpTypes(const onnx::GraphProto& g) {
  std::vector<std::string> ops;
  for (const auto& n : g.node()) ops.push_back(n.op_type());
  return ops;
}

TEST_CASE("a BatchNorm folded into a Conv is restored after it", "[import][batchnorm]") {
  ProtoModel m(/*opset=*/18);
  m.Input("x", onnx::TensorProto::FLOAT, {2, 3, 8, 8});
  m.Initializer("layer1.0.conv1.weight", onnx::TensorProto::FLOAT, {4, 3, 3, 3});
  auto& conv = m.Node("Conv", {"x", "layer1.0.conv1.weight"}, {"getitem"});
  AddMetadata(conv, kRewriterRuleNameKey, kConvRules);
  AddMetadata(conv, kTorchNameScopesKey,
              "['', 'layer1', 'layer1.0', 'layer1.0.bn1', '_native_batch_norm_legit_functional']");
  m.Node("Relu", {"getitem"}, {"relu"});
  auto& g = m.graph();

  REQUIRE(RestoreFoldedBatchNorms(g) == 1);
  CHECK(OpTypes(g) == std::vector<std::string>{"Conv", "BatchNormalization", "Relu"});
  CHECK(g.node(0).output(0) == "getitem/before_batch_norm");
  const auto& bn = g.node(1);
  CHECK(std::vector<std::string>(bn.input().begin(), bn.input().end()) ==
        std::vector<std::string>{"getitem/before_batch_norm", "layer1.0.bn1.weight",
                                 "layer1.0.bn1.bias", "layer1.0.bn1.running_mean",
                                 "layer1.0.bn1.running_var"});
  CHECK(bn.output(0) == "getitem");  // what the Relu reads
  REQUIRE(bn.attribute_size() == 1);
  CHECK(bn.attribute(0).name() == "training_mode");
  CHECK(bn.attribute(0).i() == 1);
  // [C] with C = the Conv's output channels, weight dims[0] = 4.
  for (const char* slot : {"weight", "bias", "running_mean", "running_var"}) {
    const auto* t = FindInitializer(g, std::string("layer1.0.bn1.") + slot);
    REQUIRE(t != nullptr);
    CHECK(t->dims_size() == 1);
    CHECK(t->dims(0) == 4);
    CHECK(t->data_type() == onnx::TensorProto::FLOAT);
  }
  CHECK(FindInitializer(g, "layer1.0.bn1.weight")->float_data(0) == 1.0f);
  CHECK(FindInitializer(g, "layer1.0.bn1.running_var")->float_data(3) == 1.0f);
  CHECK(FindInitializer(g, "layer1.0.bn1.running_mean")->float_data(0) == 0.0f);
}

TEST_CASE("the channel count of a folded ConvTranspose and Gemm", "[import][batchnorm]") {
  ProtoModel m(/*opset=*/18);
  m.Input("x", onnx::TensorProto::FLOAT, {2, 4, 8, 8});
  // ConvTranspose's weight is [C_in, C_out / group, k, k]: C = 3 * 2 = 6.
  m.Initializer("up.weight", onnx::TensorProto::FLOAT, {4, 3, 2, 2});
  auto& up = m.Node("ConvTranspose", {"x", "up.weight"}, {"u"});
  testing::SetInt(up, "group", 2);
  AddMetadata(up, kRewriterRuleNameKey, "FuseBatchNormIntoConvTranspose");
  m.Node("Flatten", {"u"}, {"f"});
  // Gemm with transB = 1: B is [N, K], C = N = 5.
  m.Initializer("fc.weight", onnx::TensorProto::FLOAT, {5, 1536});
  auto& fc = m.Node("Gemm", {"f", "fc.weight"}, {"y"});
  testing::SetInt(fc, "transB", 1);
  AddMetadata(fc, kRewriterRuleNameKey, "FuseBatchNormIntoGemm");
  auto& g = m.graph();

  REQUIRE(RestoreFoldedBatchNorms(g) == 2);
  CHECK(OpTypes(g) == std::vector<std::string>{"ConvTranspose", "BatchNormalization", "Flatten",
                                               "Gemm", "BatchNormalization"});
  // No scopes: the state is named after the output it restores.
  REQUIRE(FindInitializer(g, "u/batch_norm.weight") != nullptr);
  CHECK(FindInitializer(g, "u/batch_norm.weight")->dims(0) == 6);
  REQUIRE(FindInitializer(g, "y/batch_norm.running_var") != nullptr);
  CHECK(FindInitializer(g, "y/batch_norm.running_var")->dims(0) == 5);
}

TEST_CASE("nodes no BatchNorm was folded into are left alone", "[import][batchnorm]") {
  ProtoModel m(/*opset=*/18);
  m.Input("x", onnx::TensorProto::FLOAT, {2, 3, 8, 8});
  m.Initializer("w", onnx::TensorProto::FLOAT, {4, 3, 3, 3});
  m.Node("Conv", {"x", "w"}, {"plain"});  // no metadata
  auto& other = m.Node("Conv", {"plain", "w"}, {"other_rule"});
  AddMetadata(other, kRewriterRuleNameKey, "RemoveOptionalBiasFromConv");
  // The rule named, but the weight is computed, not an initializer: no channel count.
  m.Node("Identity", {"w"}, {"w_copy"});
  auto& computed = m.Node("Conv", {"other_rule", "w_copy"}, {"computed"});
  AddMetadata(computed, kRewriterRuleNameKey, kConvRules);
  // Not one of the three ops.
  auto& relu = m.Node("Relu", {"computed"}, {"r"});
  AddMetadata(relu, kRewriterRuleNameKey, kConvRules);
  auto& g = m.graph();
  CHECK(RestoreFoldedBatchNorms(g) == 0);
  CHECK(OpTypes(g) == std::vector<std::string>{"Conv", "Conv", "Identity", "Conv", "Relu"});
  CHECK(g.initializer_size() == 1);
}

}  // namespace
}  // namespace memplan

namespace memplan {
namespace {

// GraphProto.metadata_props is field 16 (IR 10): the exporter's graph signature.
void AddGraphSignature(onnx::GraphProto& graph, const std::string& signature) {
  onnx::StringStringEntryProto e;
  e.set_key("pkg.torch.export.ExportedProgram.graph_signature");
  e.set_value(signature);
  graph.GetReflection()->MutableUnknownFields(&graph)->AddLengthDelimited(kGraphMetadataField,
                                                                          e.SerializeAsString());
}

int64_t TrainingMode(const onnx::NodeProto& node) {
  for (const auto& a : node.attribute())
    if (a.name() == "training_mode") return a.i();
  return 0;
}

TEST_CASE("a BatchNorm whose running statistics torch updated is marked training",
          "[import][batchnorm]") {
  // Two BatchNorms as the dynamo exporter writes them (training_mode absent, i.e. 0); the
  // signature (as torch 2.15 writes it for nn.Sequential(Conv2d, BatchNorm2d, ReLU).train(),
  // optimize=False) mutates the first one's statistics only.
  ProtoModel m(/*opset=*/18);
  m.Input("x", onnx::TensorProto::FLOAT, {2, 4, 8, 8});
  for (const char* bn : {"1", "2"})
    for (const char* slot : {".weight", ".bias", ".running_mean", ".running_var"})
      m.Initializer(std::string(bn) + slot, onnx::TensorProto::FLOAT, {4});
  m.Node("BatchNormalization", {"x", "1.weight", "1.bias", "1.running_mean", "1.running_var"},
         {"getitem"});
  m.Node("BatchNormalization", {"getitem", "2.weight", "2.bias", "2.running_mean", "2.running_var"},
         {"getitem_5"});
  auto& g = m.graph();
  AddGraphSignature(g,
                    "\n# inputs\np_1_weight: PARAMETER target='1.weight'\n"
                    "b_1_running_mean: BUFFER target='1.running_mean' persistent=True\n"
                    "input: USER_INPUT\n\n# outputs\n"
                    "getitem_3: BUFFER_MUTATION target='1.running_mean'\n"
                    "getitem_4: BUFFER_MUTATION target='1.running_var'\n"
                    "add: BUFFER_MUTATION target='1.num_batches_tracked'\n"
                    "getitem_5: USER_OUTPUT\n");
  CHECK(MarkTrainingBatchNorms(g) == 1);
  CHECK(TrainingMode(g.node(0)) == 1);
  CHECK(TrainingMode(g.node(1)) == 0);    // not updated: as written
  CHECK(MarkTrainingBatchNorms(g) == 0);  // already marked

  ProtoModel bare(/*opset=*/18);
  CHECK(MarkTrainingBatchNorms(bare.graph()) == 0);  // no signature: nothing to go by
}

}  // namespace
}  // namespace memplan
