#pragma once
// Reading a whole JSON file into an Expected, shared by the baseline and config-list readers.

#include <cstdint>
#include <filesystem>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>
#include "graph/expected.h"

namespace memplan {

// The whole file as text. Error: "cannot read <path>".
Expected<std::string> ReadTextFile(const std::filesystem::path& path);

// Errors: "cannot read <path>" / "<path> is not valid JSON: <parser message with byte offset>" /
// "<path>: 'plan.loss_scale' is a number beyond the range of a double" (1e999: nlohmann reports
// it as an out_of_range exception, not a syntax error; the field is named from the keys read).
Expected<nlohmann::json> ReadJsonFile(const std::filesystem::path& path);

// The same for `text` read from `source` (a path, named in the errors).
Expected<nlohmann::json> ParseJsonText(const std::string& text, const std::string& source);

// The document in the JSON file at `path`, read by `from_json`, with the path before its errors
// ("<path>: <message>") and the file's folder in T::directory (what relative paths in it resolve
// against): how a baseline and a config list are read.
template <class T>
Expected<T> ReadJsonDocument(const std::filesystem::path& path,
                             Expected<T> (*from_json)(const nlohmann::json&)) {
  MEMPLAN_TRY(nlohmann::json json, ReadJsonFile(path));
  Expected<T> document = from_json(json);
  if (!document.ok()) return MakeError(path.string() + ": " + document.error().message);
  document->directory = path.parent_path();
  return document;
}

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

// HasSchema, or an error naming the document: `what` = "baseline" ->
// 'not a memplan baseline: expected "schema": "memplan-baseline/1"'.
inline Status CheckSchema(const nlohmann::json& json, const char* schema, std::string_view what) {
  if (HasSchema(json, schema)) return OkStatus();
  return MakeError("not a memplan " + std::string(what) + ": expected \"schema\": \"" + schema +
                   "\"");
}

}  // namespace memplan
