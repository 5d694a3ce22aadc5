// The conv-bias-before-batchnorm advice finds its layers by the registry's facts: a layer whose
// bias is added per output channel (Conv and ConvTranspose: OpSchema::channel_bias_input) read
// only by an op that normalises over the batch (BatchNormalization: couples_batch). Hand-built:
//
//   x [batch, 3, 8, 8] -> Conv(W1 [4, 3, 3, 3], b1 [4], pad 1) -> BN -> c1 [batch, 4, 8, 8]
//     -> ConvTranspose(W2 [4, 2, 2, 2], b2 [2], stride 2) -> BN -> t2 [batch, 2, 16, 16]
//     -> Conv(W3 [2, 2, 1, 1], b3 [2]) -> Relu -> y [batch, 2, 16, 16]
//
// b1 and b2 are cancelled by the BatchNorm that reads their layer's output (4 + 2 = 6 bias
// elements); b3 feeds a Relu and is kept. One bias add per output element at batch 2:
// 2 * 4 * 8 * 8 = 512 for the Conv, 2 * 2 * 16 * 16 = 1024 for the ConvTranspose: 1536 FLOPs.
#include <catch2/catch.hpp>

#include <string>
#include <vector>

#include "analyzer/cost/gpu_specs.h"
#include "analyzer/planning/planner.h"
#include "analyzer/report/advice.h"
#include "tests/graph/proto_model.h"

namespace memplan {
namespace {

using testing::ProtoModel;

void Ints(onnx::NodeProto& n, const std::string& name, std::vector<int64_t> values) {
  auto* a = n.add_attribute();
  a->set_name(name);
  a->set_type(onnx::AttributeProto::INTS);
  for (int64_t v : values) a->add_ints(v);
}

void BatchNorm(ProtoModel& m, const std::string& in, const std::string& out, int64_t channels) {
  for (const char* p : {"_scale", "_b", "_mean", "_var"})
    m.Initializer(out + p, onnx::TensorProto::FLOAT, {channels});
  m.Node("BatchNormalization", {in, out + "_scale", out + "_b", out + "_mean", out + "_var"},
         {out});
}

TEST_CASE(
    "a per-channel bias cancelled by a following BatchNorm is advised away, ConvTranspose's too",
    "[advice]") {
  ProtoModel m(13);
  m.Input("x", onnx::TensorProto::FLOAT, {"batch", 3, 8, 8});
  m.Initializer("W1", onnx::TensorProto::FLOAT, {4, 3, 3, 3});
  m.Initializer("b1", onnx::TensorProto::FLOAT, {4});
  Ints(m.Node("Conv", {"x", "W1", "b1"}, {"conv1"}), "pads", {1, 1, 1, 1});
  BatchNorm(m, "conv1", "c1", 4);
  m.Initializer("W2", onnx::TensorProto::FLOAT, {4, 2, 2, 2});
  m.Initializer("b2", onnx::TensorProto::FLOAT, {2});
  Ints(m.Node("ConvTranspose", {"c1", "W2", "b2"}, {"up"}), "strides", {2, 2});
  BatchNorm(m, "up", "t2", 2);
  m.Initializer("W3", onnx::TensorProto::FLOAT, {2, 2, 1, 1});
  m.Initializer("b3", onnx::TensorProto::FLOAT, {2});
  m.Node("Conv", {"t2", "W3", "b3"}, {"conv3"});
  m.Node("Relu", {"conv3"}, {"y"});
  m.Output("y", onnx::TensorProto::FLOAT, {{"batch", 2, 16, 16}});
  Graph graph = m.Import("advice_conv_bias.onnx");

  PlannerOptions options;
  options.gpu = ResolveGpu("24G").value();
  options.micro_batch = 2;
  options.program.loss = LossKind::kSum;
  TrainingPlan plan = PlanTraining(graph, options).value();

  const AdviceItem* bias = nullptr;
  const std::vector<AdviceItem> advice = AdvisePlan(graph, plan);
  for (const AdviceItem& a : advice)
    if (a.id == "conv-bias-before-batchnorm") bias = &a;
  REQUIRE(bias != nullptr);
  CHECK(bias->message.find("2 Conv layers feed BatchNorm") != std::string::npos);
  CHECK(bias->message.find("save 6 parameters") != std::string::npos);
  CHECK(bias->message.find("and 1536 FLOPs per micro-batch") != std::string::npos);
}

}  // namespace
}  // namespace memplan
