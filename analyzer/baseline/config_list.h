#pragma once
// The input of `memplan baseline`: a small JSON file listing the model + flags pairs CI tracks.
//
//   {
//     "schema": "memplan-configs/1",
//     "configurations": [
//       { "name": "resnet18-b64-fp16", "model": "models/resnet18.onnx",
//         "flags": { "batch": 64, "precision": "fp16", "gpu": "A100-80GB" } },
//       { "name": "gpt-small-seq512", "model": "models/gpt.onnx",
//         "flags": { "batch": 16, "dims": { "seq": 512 }, "recompute": "sqrt" } }
//     ]
//   }
//
// Model paths are relative to this file's directory. docs/ci_checks.md lists every flag.

#include <filesystem>
#include <functional>
#include <string_view>
#include <vector>

#include "analyzer/baseline/baseline.h"
#include "graph/expected.h"

namespace memplan {

inline constexpr const char* kConfigListSchema = "memplan-configs/1";

struct ConfigList {
  std::vector<CheckConfiguration> configurations;
  std::filesystem::path directory;  // the file's directory, for ResolveModelPath
};

Expected<ConfigList> ConfigListFromJson(const nlohmann::json& json);
Expected<ConfigList> ReadConfigList(const std::filesystem::path& path);

// Parses the "name"/"model"/"flags" members shared by config lists and baselines.
// `index` is the position in "configurations", for messages about unnamed entries.
Expected<CheckConfiguration> CheckConfigurationFromJson(const nlohmann::json& object, size_t index);

// Reads the items of `list` (a document's "configurations" array) in order: each one's
// CheckConfiguration, whose name no earlier item may have, goes with the item to `read`, and the
// first error stops the walk. `what` starts the error for a repeated name ("baseline" ->
// "baseline: configuration name 'x' appears twice").
Status ForEachConfiguration(
    const nlohmann::json& list, std::string_view what,
    const std::function<Status(CheckConfiguration config, const nlohmann::json& item)>& read);

}  // namespace memplan
