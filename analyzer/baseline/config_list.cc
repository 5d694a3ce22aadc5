#include "analyzer/baseline/config_list.h"

#include <set>

#include "analyzer/baseline/json_file.h"

namespace memplan {

Expected<CheckConfiguration> CheckConfigurationFromJson(const nlohmann::json& object,
                                                        size_t index) {
  std::string where = "configuration #" + std::to_string(index + 1) + ": ";
  if (!object.is_object()) return MakeError(where + "must be an object");
  CheckConfiguration config;
  auto name = object.find("name");
  if (name == object.end() || !name->is_string() || name->get<std::string>().empty())
    return MakeError(where + "'name' must be a non-empty string");
  config.name = name->get<std::string>();
  where = "configuration '" + config.name + "': ";
  auto model = object.find("model");
  if (model == object.end() || !model->is_string() || model->get<std::string>().empty())
    return MakeError(where + "'model' must be a non-empty path");
  config.model = model->get<std::string>();
  auto flags = object.find("flags");
  if (flags != object.end()) {
    MEMPLAN_TRY(config.flags, PlanFlagsFromJson(*flags, where));
  }
  return config;
}

Status ForEachConfiguration(
    const nlohmann::json& list, std::string_view what,
    const std::function<Status(CheckConfiguration config, const nlohmann::json& item)>& read) {
  std::set<std::string> names;
  for (size_t i = 0; i < list.size(); ++i) {
    MEMPLAN_TRY(CheckConfiguration config, CheckConfigurationFromJson(list[i], i));
    if (!names.insert(config.name).second)
      return MakeError(std::string(what) + ": configuration name '" + config.name +
                       "' appears twice");
    MEMPLAN_RETURN_IF_ERROR(read(std::move(config), list[i]));
  }
  return OkStatus();
}

Expected<ConfigList> ConfigListFromJson(const nlohmann::json& json) {
  MEMPLAN_RETURN_IF_ERROR(CheckSchema(json, kConfigListSchema, "config list"));
  auto list = json.find("configurations");
  if (list == json.end() || !list->is_array() || list->empty())
    return MakeError("config list: 'configurations' must be a non-empty array");
  ConfigList result;
  MEMPLAN_RETURN_IF_ERROR(ForEachConfiguration(
      *list, "config list", [&](CheckConfiguration config, const nlohmann::json&) -> Status {
        result.configurations.push_back(std::move(config));
        return OkStatus();
      }));
  return result;
}

Expected<ConfigList> ReadConfigList(const std::filesystem::path& path) {
  return ReadJsonDocument(path, &ConfigListFromJson);
}

}  // namespace memplan
