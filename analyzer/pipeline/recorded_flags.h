#pragma once
// A configuration's recorded flags (analyzer/baseline/plan_flags.h: what a CI baseline or an
// alternative pins) and the plan arguments a command line would give for them, both ways, so a
// recorded configuration is planned exactly as `memplan analyze` with the same flags would.

#include <string>

#include "analyzer/baseline/plan_flags.h"
#include "analyzer/pipeline/plan_request.h"

namespace memplan {

// The command-line flags `recorded` stands for (absent ones keep the CLI defaults), with `model`
// as the model argument.
PlanArguments PlanArgumentsOf(const PlanFlags& recorded, const std::string& model);

// The flags the user gave on the command line, as a configuration records them: only the ones
// that differ from the CLI's defaults. REQUIRES: `flags` passed ResolvePlanFlags (integers parse).
PlanFlags RecordedFlagsOf(const PlanArguments& flags);

}  // namespace memplan
