#pragma once
// The CI memory baseline (`memplan baseline` writes it, `memplan check` compares against it):
// a JSON file, "schema": "memplan-baseline/1", listing named configurations — a model, the flags
// it is analysed with, and the recorded result. docs/ci_checks.md documents the format.
//
// Model paths are stored as written, relative to the directory of the file that lists them (so a
// baseline checked into a repository works from any checkout); ResolveModelPath makes them usable.

#include <cstdint>
#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>
#include "analyzer/baseline/memory_result.h"
#include "analyzer/baseline/plan_flags.h"
#include "graph/expected.h"

namespace memplan {

inline constexpr const char* kBaselineSchema = "memplan-baseline/1";

// One model + flags pair, as a config list or a baseline names it.
struct CheckConfiguration {
  std::string name;   // unique within the file; names the JUnit test case and annotations
  std::string model;  // path relative to the listing file's directory (or absolute)
  PlanFlags flags;

  bool operator==(const CheckConfiguration&) const = default;
};

struct BaselineEntry {
  CheckConfiguration config;
  MemoryResult result;
  // The plan `result` was measured on ("plan" in the file, plan-flag keys; pinned_plan.h), which
  // `memplan check` replays; nullopt in a baseline written before plans were recorded.
  std::optional<PlanFlags> plan;
  // The largest micro-batch that fits with the configuration's flags (no fixed micro-batch);
  // 0 when nothing fits; nullopt when not recorded.
  std::optional<int64_t> largest_fitting_micro_batch;
};

struct Baseline {
  std::vector<BaselineEntry> entries;  // file order, which reports keep
  // Directory relative model paths resolve against: the baseline file's directory after
  // ReadBaseline; not serialized.
  std::filesystem::path directory;

  const BaselineEntry* Find(const std::string& name) const;
};

// Parse/serialize without touching the file system (`directory` is left empty on parse).
Expected<Baseline> BaselineFromJson(const nlohmann::json& json);
nlohmann::ordered_json BaselineToJson(const Baseline& baseline);

// Reads and validates a baseline file: schema, unique non-empty names, flags, results. Errors
// name the file and the configuration.
Expected<Baseline> ReadBaseline(const std::filesystem::path& path);

// Writes BaselineToJson with two-space indentation and a final newline: byte-identical for equal
// baselines, so a baseline update is a readable diff. Model paths are written as stored.
Status WriteBaseline(const Baseline& baseline, const std::filesystem::path& path);

// Configuration name -> the 1-based line of its "name" member in a baseline file's text, so
// annotations can point at it. Names the scan cannot read (escaped quotes) are left out.
std::map<std::string, int> ConfigurationLines(const std::string& baseline_text);

// directory / model, normalized; an absolute model path is returned unchanged.
std::filesystem::path ResolveModelPath(const std::filesystem::path& directory,
                                       const std::string& model);

// The path to write into a file at `listing_file` so that it resolves to `model`: relative to the
// listing file's directory, with '/' separators. Both are made absolute first.
std::string ModelPathRelativeTo(const std::filesystem::path& model,
                                const std::filesystem::path& listing_file);

}  // namespace memplan
