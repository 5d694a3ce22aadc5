#pragma once
// The bridge between a CI configuration (analyzer/baseline: a model and the plan flags it pins,
// as JSON values) and the CLI's own flag handling, so `memplan baseline` and `memplan check`
// analyse a configuration exactly as `memplan analyze` with the same flags would.

#include <filesystem>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

#include "analyzer/baseline/baseline.h"
#include "analyzer/baseline/memory_result.h"
#include "analyzer/pipeline/analysis_session.h"
#include "analyzer/pipeline/recorded_flags.h"
#include "graph/expected.h"
#include "tools/memplan/plan_flags.h"

namespace memplan::cli {

// The first option given on `command`'s line that a configuration cannot record (one that is not
// in kPlanFlagTable), or empty. Options in `own` and the model belong to the verb itself. Guards
// RecordedFlagsOf against silently dropping a flag.
std::string UnrecordableOption(const CLI::App& command, const std::vector<std::string>& own);

// What one configuration's analysis yields for a baseline or a check.
struct ConfigurationAnalysis {
  MemoryResult memory;  // of the plan analysed (the replayed one when a plan was given)
  PlanFlags plan;       // that plan, pinned (analyzer/baseline/pinned_plan.h)
  bool fits = false;    // that plan fits the GPU
  // The largest micro-batch that fits with the configuration's flags, the micro-batch searched
  // rather than fixed (a second analysis when the flags fix it).
  int64_t largest_fitting_micro_batch = 0;
};

// Analyses `config` (its model resolved against `directory`) as `memplan analyze` would; with
// `replay`, the configuration's flags overlaid by that recorded plan (`memplan check`). Errors
// are prefixed "configuration '<name>': ".
Expected<ConfigurationAnalysis> AnalyseConfiguration(const CheckConfiguration& config,
                                                     const std::filesystem::path& directory,
                                                     const PlanFlags* replay = nullptr);

}  // namespace memplan::cli
