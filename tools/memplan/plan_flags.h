#pragma once
// The plan flags on the command line: one CLI11 option per entry of kPlanFlagTable
// (analyzer/baseline/plan_flags.h), written into PlanArguments, which ResolvePlanFlags
// (analyzer/pipeline/plan_request.h) turns into a request.

#include <CLI/CLI.hpp>

#include "analyzer/pipeline/plan_request.h"
#include "tools/memplan/cli_common.h"

namespace memplan::cli {

// Adds the analysis flags plus one option per plan-only entry of kPlanFlagTable (--gpu,
// --global-batch, --precision, ...). A verb may change a default first (verify: --precision fp32);
// --help shows every default. `gpu_required`: the verb cannot plan without --gpu (its
// ResolvePlanFlags call passes require_gpu = true), and --help marks the flag "(required)".
void AddPlanFlags(CLI::App& command, PlanArguments& flags, bool gpu_required = false);

}  // namespace memplan::cli
