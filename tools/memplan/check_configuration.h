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
#include "graph/expected.h"
#include "tools/memplan/analysis_session.h"
#include "tools/memplan/plan_flags.h"

namespace memplan::cli {

// The command-line flags `recorded` stands for (absent ones keep the CLI defaults), with `model`
// as the model argument.
PlanArguments CliFlagsOf(const PlanFlags& recorded, const std::string& model);

// The flags the user gave on the command line, as a configuration records them: only the ones
// that differ from the CLI's defaults. REQUIRES: `flags` passed ResolvePlanFlags (integers parse).
PlanFlags RecordedFlagsOf(const PlanArguments& flags);

// The first option given on `command`'s line that a configuration cannot record (one that is not
// in kPlanFlagTable), or empty. Options in `own` and the model belong to the verb itself. Guards
// RecordedFlagsOf against silently dropping a flag.
std::string UnrecordableOption(const CLI::App& command, const std::vector<std::string>& own);

// Analyses `config` (its model resolved against `directory`) as `memplan analyze` would. Errors
// are prefixed "configuration '<name>': ".
Expected<MemoryResult> AnalyseConfiguration(const CheckConfiguration& config,
                                            const std::filesystem::path& directory);

}  // namespace memplan::cli
