#pragma once
// profile.json: what `memplan profile` measured, in a form `memplan analyze --profile` reads back
// to replace the cost model's estimated per-node times with measured ones.
//
//   {
//     "schema": "memplan-profile/1",
//     "model": "gpt2.onnx", "device": "NVIDIA H100 80GB HBM3",
//     "device_peak_bytes": 123, "baseline_bytes": 1, "allocator_bytes_at_peak": 100,
//     "library_bytes_at_peak": 22, "allocator_peak_bytes": 100, "activation_bytes": 40,
//     "device_seconds": 0.5, "unattributed_seconds": 0.0, "dropped_records": 0,
//     "nodes": [
//       {"name": "fc1", "forward_seconds": 1e-5, "backward_seconds": 2e-5,
//        "recompute_seconds": 0.0, "forward_runs": 4, "backward_runs": 4, "recompute_runs": 0,
//        "workspace_bytes": 0, "activation_bytes": 4096}, ...
//     ]
//   }
//
// Seconds are means per execution (per micro-batch); bytes are integers. Keys of every object
// are sorted, so identical measurements give byte-identical files.

#include <cstdint>
#include <filesystem>
#include <map>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include "analyzer/cost/cost_model.h"
#include "graph/expected.h"
#include "profiler/attribution.h"

namespace memplan::profiler {

inline constexpr std::string_view kProfileSchema = "memplan-profile/1";

// What the run was of; echoed into the file for people reading it.
struct ProfileSource {
  std::string model;
  std::string device;
};

nlohmann::json ProfileToJson(const AttributedProfile& profile, const ProfileSource& source);
// Errors: the file cannot be written.
Status WriteProfile(const std::filesystem::path& path, const AttributedProfile& profile,
                    const ProfileSource& source);

// The part of a profile the planner consumes.
struct MeasuredNode {
  double forward_seconds = 0;
  double backward_seconds = 0;
  double recompute_seconds = 0;
  int64_t workspace_bytes = 0;
  int64_t activation_bytes = 0;
};

struct MeasuredProfile {
  std::string model;
  std::string device;
  int64_t device_peak_bytes = 0;
  int64_t activation_bytes = 0;
  std::map<std::string, MeasuredNode, std::less<>> nodes;  // by graph node name
};

// Errors name `source` (a path) and the offending key: wrong or missing schema, a missing or
// mistyped field, negative seconds or bytes, a node listed twice.
Expected<MeasuredProfile> ParseProfile(const nlohmann::json& document, std::string_view source);
// Errors: unreadable file, invalid JSON, and everything ParseProfile rejects.
Expected<MeasuredProfile> ReadProfile(const std::filesystem::path& path);

// The per-node times the cost model takes (CostModelOptions::measured): forward and backward
// seconds per node name; a node the profile saw no backward of (0 s) keeps the roofline backward.
MeasuredNodeTimes ToMeasuredNodeTimes(const MeasuredProfile& profile);

}  // namespace memplan::profiler
