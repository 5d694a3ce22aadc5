// Issue 45 item 5: every op the registry plans (graph/ops) is run by `memplan verify` on a small
// valid model of tests/fixtures/verify_set/ (tests/fixtures/make_verify_set.py writes them,
// tests/cli/verify_set_tests.cmake runs verify on each), or is declared below with the reason it
// is not. A new registry op fails this test until a model for it joins the set or its gap is
// declared; a declared op that appears in the set fails it too, so the list stays true.

#include <onnx/onnx_pb.h>

#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "graph/onnx_import.h"
#include "graph/ops/op_registry.h"
#include "tests/test_paths.h"

namespace memplan {
namespace {

// "domain:op" ("" for ai.onnx) of every node of `path`, as written in the file and as verify
// imports it (after the importer's default fusions).
void AddOpsOf(const std::filesystem::path& path, std::set<std::string>& ops) {
  INFO(path.string());
  std::ifstream in(path, std::ios::binary);
  onnx::ModelProto model;
  REQUIRE(model.ParseFromIstream(&in));
  for (const onnx::NodeProto& node : model.graph().node()) {
    const std::string domain = node.domain() == "ai.onnx" ? "" : node.domain();
    ops.insert(domain + ":" + node.op_type());
  }
  Expected<Graph> imported = ImportOnnxModel(path.string());
  // A model whose verify states a limitation may still import; one that does not import adds
  // only its written ops.
  if (!imported.ok()) return;
  for (const Node& node : imported->nodes()) ops.insert(node.domain + ":" + node.op_type);
}

// Models outside verify_set/ that a CLI test runs `memplan verify` on and expects to pass:
// the opset-23 block (Attention, RMSNormalization) and both RotaryEmbedding forms
// (tests/cli/new_opsets_tests.cmake).
constexpr const char* kVerifiedElsewhere[] = {"opset23_block.onnx", "opset23_rotary.onnx",
                                              "ms_rotary.onnx"};

std::set<std::string> OpsVerified() {
  std::set<std::string> ops;
  const std::filesystem::path fixtures(memplan::testing::FixturesDir());
  for (const auto& entry : std::filesystem::directory_iterator(fixtures / "verify_set"))
    if (entry.path().extension() == ".onnx") AddOpsOf(entry.path(), ops);
  for (const char* model : kVerifiedElsewhere) AddOpsOf(fixtures / model, ops);
  return ops;
}

// Registry ops ("domain:op") no verified model contains, with the reason.
const std::map<std::string, std::string>& NotInVerifySet() {
  static const std::map<std::string, std::string> gaps = {
      // No CPU kernel (tests/runtime/kernel_coverage_test.cc declares the same gaps): verify
      // names the op it cannot run and stops, exit 2.
      {"com.microsoft:GroupQueryAttention", "no CPU kernel yet"},
      {"com.microsoft:MultiHeadAttention", "no CPU kernel yet"},
      // A loss written in the model: verify appends its own loss to the model output, and the
      // backend's loss path computes this op (runtime/backend.h LossForward), not a kernel.
      {":SoftmaxCrossEntropyLoss", "computed by the backend's loss path, not as a model op"},
      // memplan's own ops written by a flag's rewrite (or a fusion only a flag's set applies),
      // not by the default import: no model file names them. Verify runs each under its flag in the
      // CLI test named (the fusions' ops are in the set: fused_*.onnx).
      {"memplan:FusedLinearCrossEntropy",
       "--fused-loss: 'verify --fused-loss runs lm_head on the CPU kernel, memory exact at "
       "92196 B'"},
      {"memplan:MseLoss", "--loss mse: 'verify set: the appended losses run: --loss mse'"},
      {"memplan:ScaledDotProductAttention",
       "--attention sdpa: 'verify transformer with --attention sdpa passes'"},
      {"memplan:SumLoss", "--loss sum: 'verify set: the appended losses run: --loss sum'"},
      {"memplan:SwiGlu",
       "--fusions liger: 'verify --fusions liger verifies on the CPU runtime (memplan:SwiGlu's "
       "kernel)'"},
      {"memplan:GeGlu",
       "--fusions liger: 'verify --fusions liger verifies a Gemma on the CPU runtime "
       "(memplan:GeGlu's kernel)'"},
  };
  return gaps;
}

TEST_CASE("every registry op is in the verify set or a stated limitation", "[verify_set]") {
  const std::set<std::string> in_set = OpsVerified();
  const std::map<std::string, std::string>& declared = NotInVerifySet();
  std::vector<std::string> undeclared, stale;
  for (const OpSchema* op : OpRegistry::Get().Schemas()) {
    const std::string key = op->domain + ":" + op->op_type;
    const bool covered = in_set.count(key) > 0;
    const bool is_declared = declared.count(key) > 0;
    if (!covered && !is_declared) undeclared.push_back(key);
    if (covered && is_declared) stale.push_back(key);
  }
  INFO("registry ops in no verify-set model and not declared: "
       << Catch::Detail::stringify(undeclared));
  CHECK(undeclared.empty());
  INFO("declared as not in the verify set but in it: " << Catch::Detail::stringify(stale));
  CHECK(stale.empty());
  // Every declared op is a registry op (a typo would hide a gap), each with its reason.
  for (const auto& [key, why] : declared) {
    INFO(key << ": " << why);
    const size_t colon = key.find(':');
    REQUIRE(colon != std::string::npos);
    CHECK(OpRegistry::Get().Find(key.substr(colon + 1), key.substr(0, colon)) != nullptr);
    CHECK(!why.empty());
  }
}

}  // namespace
}  // namespace memplan
