#pragma once
// The CI memory baseline (`memplan baseline` writes it, `memplan check` compares against it):
// a JSON file, "schema": "memplan-baseline/1", listing named configurations — a model, the flags
// it is analysed with, and the recorded result. docs/ci_checks.md documents the format.
//
// Model paths are stored as written, relative to the directory of the file that lists them (so a
// baseline checked into a repository works from any checkout); ResolveModelPath makes them usable.

#include <filesystem>
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

// directory / model, normalized; an absolute model path is returned unchanged.
std::filesystem::path ResolveModelPath(const std::filesystem::path& directory,
                                       const std::string& model);

// The path to write into a file at `listing_file` so that it resolves to `model`: relative to the
// listing file's directory, with '/' separators. Both are made absolute first.
std::string ModelPathRelativeTo(const std::filesystem::path& model,
                                const std::filesystem::path& listing_file);

}  // namespace memplan
