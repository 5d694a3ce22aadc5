#pragma once
// Reading a whole JSON file into an Expected, shared by the baseline and config-list readers.

#include <cstdint>
#include <filesystem>

#include <nlohmann/json.hpp>
#include "graph/expected.h"

namespace memplan {

// Errors: "cannot read <path>" / "<path> is not valid JSON: <parser message with byte offset>".
Expected<nlohmann::json> ReadJsonFile(const std::filesystem::path& path);

// True when `value` is an integer that fits int64_t (nlohmann stores large positives unsigned).
inline bool IsInt64(const nlohmann::json& value) {
  if (value.is_number_unsigned()) return value.get<uint64_t>() <= uint64_t{INT64_MAX};
  return value.is_number_integer();
}

}  // namespace memplan
