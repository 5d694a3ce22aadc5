#pragma once
// Reading a whole JSON file into an Expected, shared by the baseline and config-list readers.

#include <cstdint>
#include <filesystem>
#include <string>

#include <nlohmann/json.hpp>
#include "graph/expected.h"

namespace memplan {

// The whole file as text. Error: "cannot read <path>".
Expected<std::string> ReadTextFile(const std::filesystem::path& path);

// Errors: "cannot read <path>" / "<path> is not valid JSON: <parser message with byte offset>".
Expected<nlohmann::json> ReadJsonFile(const std::filesystem::path& path);

// True when `value` is an integer that fits int64_t (nlohmann stores large positives unsigned).
inline bool IsInt64(const nlohmann::json& value) {
  if (value.is_number_unsigned()) return value.get<uint64_t>() <= uint64_t{INT64_MAX};
  return value.is_number_integer();
}

// True when `json` is an object whose "schema" is the string `schema` (any other type is false,
// never a JSON exception).
inline bool HasSchema(const nlohmann::json& json, const char* schema) {
  if (!json.is_object()) return false;
  auto it = json.find("schema");
  return it != json.end() && it->is_string() && it->get<std::string>() == schema;
}

}  // namespace memplan
