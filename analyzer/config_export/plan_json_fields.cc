#include "analyzer/config_export/plan_json_fields.h"

#include <cctype>
#include <limits>
#include <sstream>

#include "analyzer/baseline/json_file.h"
#include "analyzer/parallel/engine_options.h"

namespace memplan {
namespace {

std::string Field(const std::string& where, const char* key) { return "'" + where + key + "'"; }

}  // namespace

Expected<std::string> RequiredPlanString(const nlohmann::json& object, const char* key,
                                         const std::string& where) {
  auto it = object.find(key);
  if (it == object.end() || !it->is_string())
    return MakeError(Field(where, key) + " is missing or not a string");
  return it->get<std::string>();
}

Expected<int64_t> RequiredPlanPositiveInt(const nlohmann::json& object, const char* key,
                                          const std::string& where) {
  auto it = object.find(key);
  if (it == object.end() || !IsInt64(*it))
    return MakeError(Field(where, key) + " is missing or not an integer");
  const auto value = it->get<int64_t>();
  if (value < 1) return MakeError(Field(where, key) + " must be at least 1");
  return value;
}

Expected<std::optional<std::string>> OptionalPlanString(const nlohmann::json& object,
                                                        const char* key, const std::string& where) {
  auto it = object.find(key);
  if (it == object.end() || it->is_null()) return std::optional<std::string>();
  if (!it->is_string()) return MakeError(Field(where, key) + " is not a string");
  return std::optional<std::string>(it->get<std::string>());
}

Expected<std::optional<bool>> OptionalPlanBool(const nlohmann::json& object, const char* key,
                                               const std::string& where) {
  auto it = object.find(key);
  if (it == object.end() || it->is_null()) return std::optional<bool>();
  if (!it->is_boolean()) return MakeError(Field(where, key) + " is not a boolean");
  return std::optional<bool>(it->get<bool>());
}

Expected<std::vector<std::string>> OptionalPlanStringList(const nlohmann::json& object,
                                                          const char* key,
                                                          const std::string& where) {
  std::vector<std::string> names;
  auto it = object.find(key);
  if (it == object.end() || it->is_null()) return names;
  if (!it->is_array()) return MakeError(Field(where, key) + " is not an array");
  for (const nlohmann::json& item : *it) {
    if (!item.is_string()) return MakeError(Field(where, key) + " holds a non-string");
    names.push_back(item.get<std::string>());
  }
  return names;
}

Expected<std::optional<double>> OptionalPlanLossScale(const nlohmann::json& plan) {
  auto it = plan.find("loss_scale");
  if (it == plan.end() || it->is_null()) return std::optional<double>();
  if (!it->is_number()) return MakeError("'plan.loss_scale' is not a number");
  const double scale = it->get<double>();
  if (!(scale > 0.0) || scale > static_cast<double>(std::numeric_limits<float>::max())) {
    std::ostringstream text;
    text << scale;
    return MakeError("'plan.loss_scale' is " + text.str() +
                     "; a loss scale is a positive float32 (at most 3.4e38)");
  }
  return std::optional<double>(scale);
}

Expected<std::vector<DimBinding>> PlanBindingsOf(const nlohmann::json& document) {
  std::vector<DimBinding> bindings;
  auto it = document.find("bindings");
  if (it == document.end() || it->is_null()) return bindings;
  if (!it->is_object()) return MakeError("'bindings' is not an object of symbol: size");
  for (const auto& item : it->items()) {
    const nlohmann::json& value = item.value();
    if (!IsInt64(value) || value.get<int64_t>() < 1)
      return MakeError("'bindings." + item.key() + "' is not a positive integer");
    bindings.push_back(DimBinding{item.key(), value.get<int64_t>()});
  }
  return bindings;
}

Expected<const nlohmann::json*> PlanObjectOf(const nlohmann::json& document) {
  if (!document.is_object()) return MakeError("the input is not a JSON object");
  auto schema = document.find("schema");
  if (schema == document.end() || !schema->is_string() || *schema != kPlanJsonSchema)
    return MakeError(std::string("'schema' is not \"") + kPlanJsonSchema + "\"");
  auto plan = document.find("plan");
  if (plan == document.end() || !plan->is_object())
    return MakeError("'plan' is missing or not an object");
  return &*plan;
}

Expected<int64_t> PlanTensorParallelDegree(const nlohmann::json& plan) {
  auto split = plan.find("tensor_parallel");
  if (split == plan.end() || split->is_null()) return int64_t{1};
  if (!split->is_object()) return MakeError("plan.tensor_parallel is not an object");
  return RequiredPlanPositiveInt(*split, "degree", "plan.tensor_parallel.");
}

Expected<std::optional<DataParallelOptions>> OptionalPlanDataParallel(const nlohmann::json& plan) {
  if (!plan.contains("parallel") || plan["parallel"].is_null())
    return std::optional<DataParallelOptions>();
  MEMPLAN_TRY(std::string strategy, RequiredPlanString(plan, "parallel", "plan."));
  std::string lower = strategy;
  for (char& c : lower) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  Expected<ParallelStrategy> parsed = ParseParallelStrategy(lower);
  if (!parsed.ok()) return MakeError("unknown plan.parallel '" + strategy + "'");
  DataParallelOptions dp;
  dp.strategy = *parsed;
  MEMPLAN_TRY(dp.ranks, RequiredPlanPositiveInt(plan, "gpus", "plan."));
  MEMPLAN_TRY(int64_t tp, PlanTensorParallelDegree(plan));
  if (dp.ranks % tp != 0)
    return MakeError("plan.tensor_parallel.degree " + std::to_string(tp) +
                     " does not divide plan.gpus " + std::to_string(dp.ranks));
  dp.ranks /= tp;
  if (plan.contains("nodes")) {
    MEMPLAN_TRY(dp.nodes, RequiredPlanPositiveInt(plan, "nodes", "plan."));
  }
  if (plan.contains("engine_options") && !plan["engine_options"].is_null()) {
    MEMPLAN_RETURN_IF_ERROR(EngineOptionsFromJson(plan["engine_options"], dp));
  }
  if (dp.ranks % dp.nodes != 0)
    return MakeError("plan.nodes " + std::to_string(dp.nodes) + " does not divide plan.gpus " +
                     std::to_string(dp.ranks));
  return std::optional<DataParallelOptions>(dp);
}

}  // namespace memplan
