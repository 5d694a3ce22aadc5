#include "analyzer/report/lora_plan_report.h"

#include <algorithm>
#include <set>
#include <string_view>

#include "analyzer/recompute/checkpoint_modules.h"
#include "graph/linear_weight.h"

namespace memplan {
namespace {

// graph/lora_adapters.cc names the adapters of weight W "W.lora_A" ([in, r]) and "W.lora_B".
constexpr std::string_view kAdapterA = ".lora_A";
constexpr std::string_view kAdapterB = ".lora_B";

bool EndsWith(std::string_view text, std::string_view suffix) {
  return text.size() >= suffix.size() && text.substr(text.size() - suffix.size()) == suffix;
}

bool IsAdapter(const Value& v) {
  return EndsWith(v.name, kAdapterA) || EndsWith(v.name, kAdapterB);
}

// The module owning linear weight `w` (see the header).
std::string ModulePathOf(const Graph& graph, const Value& w) {
  constexpr std::string_view kWeight = ".weight";
  if (EndsWith(w.name, kWeight) && w.name.find("::") == std::string::npos)
    return w.name.substr(0, w.name.size() - kWeight.size());
  if (std::optional<LinearWeightUse> use = AsLinearWeight(graph, w.id)) {
    for (NodeId product : use->products) {
      std::vector<std::string> scopes = ModuleScopesOfNode(graph.node(product).name);
      if (!scopes.empty()) return scopes.back();
    }
  }
  return w.name;
}

std::string LastName(const std::string& module_path) {
  const size_t dot = module_path.rfind('.');
  return dot == std::string::npos ? module_path : module_path.substr(dot + 1);
}

}  // namespace

std::optional<LoraPlanReport> LoraPlanReportOf(const Graph& graph) {
  LoraPlanReport lora;
  std::set<std::string> targeted;
  for (const Value& v : graph.values()) {
    if (v.kind != ValueKind::kParameter || !EndsWith(v.name, kAdapterA)) continue;
    const std::string base = v.name.substr(0, v.name.size() - kAdapterA.size());
    std::optional<ValueId> weight = graph.FindValue(base);
    if (!weight || !v.shape.known || v.shape.rank() != 2) continue;
    std::optional<int64_t> rank = v.shape.dims[1].constant_value();
    if (!rank) continue;
    lora.rank = *rank;
    const std::string module = ModulePathOf(graph, graph.value(*weight));
    lora.target_modules.push_back(module);
    targeted.insert(module);
  }
  if (lora.target_modules.empty()) return std::nullopt;
  lora.alpha = lora.rank;  // graph/lora_adapters.h: scaling 1

  // PEFT matches a name in target_modules against a module key by equality or by the suffix
  // "." + name: the last names are enough when no other linear layer shares one of them.
  std::set<std::string> last_names;
  for (const std::string& module : lora.target_modules) last_names.insert(LastName(module));
  bool exact = true;
  for (const Value& v : graph.values()) {
    if (v.kind != ValueKind::kParameter || IsAdapter(v) || !AsLinearWeight(graph, v.id)) continue;
    const std::string module = ModulePathOf(graph, v);
    if (last_names.count(LastName(module)) && !targeted.count(module)) exact = false;
  }
  if (exact)
    lora.peft_target_modules.assign(last_names.begin(), last_names.end());
  else
    lora.peft_target_modules = lora.target_modules;
  return lora;
}

nlohmann::ordered_json LoraPlanReportJson(const LoraPlanReport& lora) {
  nlohmann::ordered_json j;
  j["rank"] = lora.rank;
  j["alpha"] = lora.alpha;
  j["dropout"] = lora.dropout;
  j["target_modules"] = lora.target_modules;
  j["peft_target_modules"] = lora.peft_target_modules;
  return j;
}

}  // namespace memplan
