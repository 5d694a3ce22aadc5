#pragma once
// A traced run as Chrome Trace Event Format JSON, viewable in Perfetto (ui.perfetto.dev) and
// chrome://tracing:
//
//   process "memplan program" (pid 0), thread "steps" (tid 0): one slice per step execution,
//       over its host interval when known, else over the extent of its device activity; args
//       step, node, phase, micro_batch, external_id.
//   process "GPU <d>" (pid d + 1), thread "stream <s>" (tid s): one slice per kernel, memcpy and
//       memset (cat "kernel" / "memcpy" / "memset"), with the attributed step's names as args.
//   process "GPU <d>": counter "device memory" ({"bytes": live}) with one sample per allocation
//       and release, starting from the attribution's baseline bytes.
//
// Times are microseconds relative to the earliest timestamp in the trace. The output is a pure
// function of its inputs (object keys sorted, events in a fixed order), so it can be diffed.

#include <filesystem>
#include <string>

#include "graph/expected.h"
#include "profiler/activity_records.h"
#include "profiler/attribution.h"
#include "profiler/step_table.h"

namespace memplan::profiler {

// REQUIRES: `profile` was attributed from `trace` and `steps`.
std::string ChromeTraceJson(const ActivityTrace& trace, const StepTable& steps,
                            const AttributedProfile& profile);

// Errors: the file cannot be written.
Status WriteChromeTrace(const std::filesystem::path& path, const ActivityTrace& trace,
                        const StepTable& steps, const AttributedProfile& profile);

}  // namespace memplan::profiler
