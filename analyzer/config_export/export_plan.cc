#include "analyzer/config_export/export_plan.h"

#include <algorithm>
#include <cctype>
#include <limits>

namespace memplan {
namespace {

std::string Lower(std::string text) {
  std::transform(text.begin(), text.end(), text.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return text;
}

Error PlanError(const std::string& what) {
  return MakeError("cannot export this plan: " + what +
                   " (expected the output of `memplan analyze --json`, schema memplan/1)");
}

Expected<std::string> RequiredString(const nlohmann::json& object, const char* key,
                                     const std::string& where) {
  auto it = object.find(key);
  if (it == object.end() || !it->is_string())
    return PlanError("'" + where + key + "' is missing or not a string");
  return it->get<std::string>();
}

Expected<int64_t> RequiredPositiveInt(const nlohmann::json& object, const char* key,
                                      const std::string& where) {
  auto it = object.find(key);
  if (it == object.end() || !it->is_number_integer())
    return PlanError("'" + where + key + "' is missing or not an integer");
  int64_t value = it->get<int64_t>();
  if (value < 1) return PlanError("'" + where + key + "' must be at least 1");
  return value;
}

// The vocabulary's names, case-insensitive: plan files may come from other tools.
Expected<Precision> PlanPrecision(const std::string& text) {
  Expected<Precision> precision = ParsePrecision(Lower(text));
  if (precision.ok()) return precision;
  return PlanError("unknown plan.precision '" + text + "' (expected " +
                   JoinNames(kPrecisionNames, ", ", " or ") + ")");
}

// The vocabulary's names, case-insensitive, plus the spellings other tools use for SGD with
// momentum.
Expected<OptimizerKind> PlanOptimizer(const std::string& text) {
  std::string o = Lower(text);
  if (o == "sgd-momentum" || o == "sgd_momentum") return OptimizerKind::kMomentum;
  Expected<OptimizerKind> optimizer = ParseOptimizerKind(o);
  if (optimizer.ok()) return optimizer;
  return PlanError("unknown plan.optimizer '" + text + "' (expected " +
                   JoinNames(kOptimizerKindNames, ", ", " or ") + ")");
}

Expected<bool> ParseZeroGrad(const nlohmann::json& plan) {
  auto it = plan.find("zero_grad");
  if (it == plan.end()) return true;
  if (!it->is_string()) return PlanError("'plan.zero_grad' is not a string");
  std::string z = Lower(it->get<std::string>());
  if (z == "none" || z == "set_to_none") return true;
  if (z == "zero" || z == "zeros") return false;
  return PlanError("unknown plan.zero_grad '" + it->get<std::string>() +
                   "' (expected none/set_to_none or zero)");
}

Expected<std::vector<std::string>> OptionalStringList(const nlohmann::json& plan, const char* key) {
  std::vector<std::string> names;
  auto it = plan.find(key);
  if (it == plan.end()) return names;
  if (!it->is_array()) return PlanError(std::string("'plan.") + key + "' is not an array");
  for (const nlohmann::json& item : *it) {
    if (!item.is_string()) return PlanError(std::string("'plan.") + key + "' holds a non-string");
    names.push_back(item.get<std::string>());
  }
  return names;
}

}  // namespace

ExportPlan ExportPlanOf(const PlanReport& report) {
  ExportPlan result;
  result.model_path = report.model_path;
  result.model_name = report.model_name;
  result.micro_batch = report.micro_batch;
  result.accumulation_steps = report.accumulation_steps;
  result.precision = report.precision;
  result.optimizer = report.optimizer;
  result.zero_grad_set_to_none = report.zero_grad == ZeroGradMode::kSetToNone;
  result.clip_gradients = report.clip_gradients;
  result.recompute_nodes = report.recompute_nodes;
  result.checkpoints = GroupRecomputeByModule(result.recompute_nodes);
  return result;
}

Expected<ExportPlan> ReadExportPlan(const nlohmann::json& plan_json) {
  if (!plan_json.is_object()) return PlanError("the input is not a JSON object");
  auto schema = plan_json.find("schema");
  if (schema == plan_json.end() || *schema != "memplan/1")
    return PlanError("'schema' is not \"memplan/1\"");
  auto plan_it = plan_json.find("plan");
  if (plan_it == plan_json.end() || !plan_it->is_object())
    return PlanError("'plan' is missing; export needs a plan from `memplan analyze --json`");
  const nlohmann::json& plan = *plan_it;

  ExportPlan result;
  auto model = plan_json.find("model");
  if (model != plan_json.end() && model->is_object()) {
    result.model_path = model->value("path", std::string());
    result.model_name = model->value("name", std::string());
  }
  MEMPLAN_TRY(result.micro_batch, RequiredPositiveInt(plan, "micro_batch", "plan."));
  MEMPLAN_TRY(result.accumulation_steps, RequiredPositiveInt(plan, "accumulation_steps", "plan."));
  if (result.micro_batch > std::numeric_limits<int64_t>::max() / result.accumulation_steps)
    return PlanError("plan.micro_batch * plan.accumulation_steps overflows");
  MEMPLAN_TRY(std::string precision, RequiredString(plan, "precision", "plan."));
  MEMPLAN_TRY(result.precision, PlanPrecision(precision));
  MEMPLAN_TRY(std::string optimizer, RequiredString(plan, "optimizer", "plan."));
  MEMPLAN_TRY(result.optimizer, PlanOptimizer(optimizer));
  MEMPLAN_TRY(result.zero_grad_set_to_none, ParseZeroGrad(plan));
  auto clip = plan.find("clip_gradients");
  if (clip != plan.end()) {
    if (!clip->is_boolean()) return PlanError("'plan.clip_gradients' is not a boolean");
    result.clip_gradients = clip->get<bool>();
  }
  MEMPLAN_TRY(result.recompute_nodes, OptionalStringList(plan, "recompute"));
  result.checkpoints = GroupRecomputeByModule(result.recompute_nodes);
  return result;
}

}  // namespace memplan
