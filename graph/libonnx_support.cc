#include "graph/libonnx_support.h"

#include <onnx/defs/schema.h>

#include <map>

namespace memplan {
namespace {

// The domains whose versions libonnx's DomainToVersionRange tracks ("" is ai.onnx). Ops in
// other domains (com.microsoft, custom) are never checked against a schema by libonnx.
bool IsStandardDomain(const std::string& domain) {
  return domain.empty() || domain == "ai.onnx" || domain == "ai.onnx.ml" ||
         domain == "ai.onnx.training" || domain == "ai.onnx.preview.training";
}

std::string Canonical(const std::string& domain) { return domain == "ai.onnx" ? "" : domain; }

std::string DomainLabel(const std::string& domain) { return domain.empty() ? "ai.onnx" : domain; }

}  // namespace

LibOnnxSupport AssessLibOnnxSupport(const onnx::ModelProto& model) {
  const auto& known = onnx::OpSchemaRegistry::DomainToVersionRange::Instance().Map();
  std::map<std::string, int> versions;
  for (const auto& opset : model.opset_import()) {
    const std::string domain = Canonical(opset.domain());
    if (!IsStandardDomain(domain)) continue;
    auto range = known.find(domain);
    const int newest = range == known.end() ? 0 : range->second.second;
    if (opset.version() > newest) {
      return {false, "the model imports " + DomainLabel(domain) + " opset " +
                         std::to_string(opset.version()) +
                         " and this build's ONNX knows opsets up to " + std::to_string(newest)};
    }
    versions[domain] = static_cast<int>(opset.version());
  }
  for (const auto& node : model.graph().node()) {
    const std::string domain = Canonical(node.domain());
    if (!IsStandardDomain(domain)) continue;
    auto version = versions.find(domain);
    if (version == versions.end()) continue;  // no opset import: the builder's checks report it
    if (onnx::OpSchemaRegistry::Schema(node.op_type(), version->second, domain) == nullptr) {
      return {false, "op " + DomainLabel(domain) + "::" + node.op_type() + " at opset " +
                         std::to_string(version->second) + " is not known to this build's ONNX"};
    }
  }
  return {};
}

std::string LibOnnxSkippedNote(const LibOnnxSupport& support) {
  return "ONNX checker and shape inference not run (" + support.reason +
         "); memplan's structural checks and op-registry shape rules were used instead";
}

}  // namespace memplan
