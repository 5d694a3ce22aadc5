// Registered buffers in exports (graph/exported_buffers.h): fixtures written by
// tests/fixtures/make_exported_buffer_fixtures.py from one module, Linear(8, 8)(x + pos) with
// `pos` [4, 8] a registered buffer: torch trains 72 elements (64 weights + 8 biases), never pos.
#include <catch2/catch.hpp>

#include <algorithm>
#include <string>

#include "graph/exported_buffers.h"
#include "graph/trainable_parameters.h"
#include "tests/graph/import_test_util.h"
#include "tests/graph/proto_model.h"

namespace memplan {
namespace {

using testing::ImportFixture;
using testing::ValueNamed;

bool AnyWarningContains(const Graph& graph, const std::string& text) {
  return std::any_of(graph.warnings.begin(), graph.warnings.end(),
                     [&](const std::string& w) { return w.find(text) != std::string::npos; });
}

TEST_CASE("a dynamo export's graph signature keeps its buffers untrained", "[import][buffers]") {
  const Graph graph = ImportFixture("exported_buffer_dynamo.onnx");
  CHECK_FALSE(ValueNamed(graph, "pos").trainable);
  // Linear(8, 8): 8 * 8 + 8 = 72, as torch's parameters with requires_grad.
  CHECK(TrainedParameterCount(graph) == 72);
  CHECK(AnyWarningContains(graph, "1 floating buffer (pos)"));
}

// An RMSNorm (make_exported_buffer_fixtures.py): the dynamo exporter stores its exponent 2.0
// (val_0) and epsilon 1e-6 (val_4) as float initializers the signature records as neither
// parameter nor buffer. torch trains the 8 scale elements only.
TEST_CASE("a dynamo export's lifted constants are not trained", "[import][buffers]") {
  const Graph graph = ImportFixture("exported_constant_dynamo.onnx");
  CHECK(ValueNamed(graph, "weight").trainable);
  CHECK_FALSE(ValueNamed(graph, "val_0").trainable);
  CHECK_FALSE(ValueNamed(graph, "val_4").trainable);
  CHECK(TrainedParameterCount(graph) == 8);
  // Not the model's buffers: no warning about them.
  CHECK_FALSE(AnyWarningContains(graph, "floating buffer"));
}

TEST_CASE("without a signature a positional table is trained, with a warning naming it",
          "[import][buffers]") {
  const Graph graph = ImportFixture("exported_buffer_torchscript.onnx");
  // The TorchScript export cannot tell: pos [4, 8] counts, 72 + 32 = 104.
  CHECK(TrainedParameterCount(graph) == 104);
  CHECK(AnyWarningContains(graph, "(pos) reach the loss only through Add/Sub"));
  // The Linear's bias is rank 1 and added too: not named.
  CHECK_FALSE(AnyWarningContains(graph, "lin.bias"));
}

TEST_CASE("the signature is read from value_info metadata this protobuf may not know",
          "[import][buffers]") {
  // ValueInfoProto.metadata_props is field 4 (IR 10); written here as an unknown field, as a
  // libonnx older than IR 10 keeps it.
  onnx::GraphProto g;
  auto add_meta = [&](const std::string& name, const std::string& key, const std::string& value) {
    onnx::ValueInfoProto* vi = g.add_value_info();
    vi->set_name(name);
    onnx::StringStringEntryProto e;
    e.set_key(key);
    e.set_value(value);
    vi->GetReflection()->MutableUnknownFields(vi)->AddLengthDelimited(4, e.SerializeAsString());
  };
  auto add_kind = [&](const std::string& name, const std::string& kind) {
    add_meta(name, "pkg.torch.export.graph_signature.InputSpec.kind", kind);
  };
  SECTION("no metadata: no signature") {
    g.add_value_info()->set_name("w");
    const ExportedBuffers exported = ReadExportedBuffers(g);
    CHECK_FALSE(exported.has_signature);
  }
  SECTION("one parameter, one buffer") {
    add_kind("w", "PARAMETER");
    add_kind("table", "BUFFER");
    const ExportedBuffers exported = ReadExportedBuffers(g);
    CHECK(exported.has_signature);
    CHECK(exported.buffers == std::set<std::string>{"table"});
    CHECK(exported.parameters == std::set<std::string>{"w"});
  }
  SECTION("an initializer the optimizer folded from a parameter is that parameter") {
    // As Llama's dynamo export stores Transpose(q_proj.weight) (val_113) and its causal mask
    // (folded from constants): q_proj.weight itself is gone from the graph, named only by the
    // graph's whole signature (GraphProto.metadata_props, field 16).
    onnx::StringStringEntryProto signature;
    signature.set_key("pkg.torch.export.ExportedProgram.graph_signature");
    signature.set_value(
        "\n# inputs\np_q_proj_weight: PARAMETER target='q_proj.weight'\n"
        "b_inv_freq: BUFFER target='inv_freq' persistent=False\ninputs_0: USER_INPUT\n");
    g.GetReflection()->MutableUnknownFields(&g)->AddLengthDelimited(16,
                                                                    signature.SerializeAsString());
    add_meta("val_113", "pkg.onnxscript.optimizer.folded_from", "['q_proj.weight']");
    add_meta("mask", "pkg.onnxscript.optimizer.folded_from", "['arange', 'val_2', 'cumsum']");
    add_meta("cos", "pkg.onnxscript.optimizer.folded_from", "['inv_freq', 'arange']");
    const ExportedBuffers exported = ReadExportedBuffers(g);
    CHECK(exported.has_signature);
    CHECK(exported.parameters == std::set<std::string>{"q_proj.weight", "val_113"});
    CHECK(exported.buffers == std::set<std::string>{"inv_freq"});
  }
}

// A rotary table as the TorchScript exporter writes it (ESM's RotaryEmbedding): angles =
// positions [4, 1] (arange over the sequence, a constant) x inv_freq [4], concatenated with
// themselves, read by Cos and Sin that multiply the activation. torch registers inv_freq as a
// buffer: only the Linear's 8 x 8 = 64 weights train. A Time2Vec-style sin(x * w) multiplies its
// weight with the data instead: w trains (64 + 8 = 72).
testing::ProtoModel RotaryModel(bool periodic_weight) {
  using testing::ProtoDim;
  testing::ProtoModel m(17);
  constexpr int32_t kFloat = onnx::TensorProto::FLOAT;
  m.Input("x", kFloat, {std::string("batch"), int64_t{4}, int64_t{8}});
  m.Initializer("W", kFloat, {8, 8});
  m.Node("MatMul", {"x", "W"}, {"h"});
  if (periodic_weight) {
    m.Initializer("w", kFloat, {8});
    m.Node("Mul", {"h", "w"}, {"t"});
    m.Node("Sin", {"t"}, {"y"});
  } else {
    m.Initializer("inv_freq", kFloat, {4});
    m.Int64s("positions", {0, 1, 2, 3}).Int64s("axis1", {1});
    testing::SetInt(m.Node("Cast", {"positions"}, {"t"}), "to", kFloat);
    m.Node("Unsqueeze", {"t", "axis1"}, {"t_col"});
    m.Node("Mul", {"t_col", "inv_freq"}, {"freqs"});
    testing::SetInt(m.Node("Concat", {"freqs", "freqs"}, {"angles"}), "axis", -1);
    m.Node("Cos", {"angles"}, {"cos"});
    m.Node("Sin", {"angles"}, {"sin"});
    m.Node("Mul", {"h", "cos"}, {"hc"});
    m.Node("Mul", {"h", "sin"}, {"hs"});
    m.Node("Add", {"hc", "hs"}, {"y"});
  }
  m.Output("y", kFloat, std::vector<ProtoDim>{std::string("batch"), int64_t{4}, int64_t{8}});
  return m;
}

TEST_CASE("without a signature a rotary inv_freq read only through Sin/Cos is not trained",
          "[import][buffers]") {
  const Graph graph = RotaryModel(false).Import("rotary_inv_freq.onnx");
  CHECK_FALSE(ValueNamed(graph, "inv_freq").trainable);
  CHECK(TrainedParameterCount(graph) == 64);
  CHECK(AnyWarningContains(graph,
                           "1 floating initializer (inv_freq) reach the loss only "
                           "through Sin/Cos of constant positions"));
  const Graph periodic = RotaryModel(true).Import("time2vec.onnx");
  CHECK(ValueNamed(periodic, "w").trainable);
  CHECK(TrainedParameterCount(periodic) == 72);
  CHECK_FALSE(AnyWarningContains(periodic, "Sin/Cos"));
}

}  // namespace
}  // namespace memplan
