#pragma once
// Attribution: from a traced run (ActivityTrace) and the executor's step table to per-step and
// per-node measurements, and the device-level memory peak.
//
// Which step a record belongs to. A device record carries the correlation id of its CUDA API call;
// an ExternalCorrelationRecord in the kStep domain maps that id to the external id the executor
// pushed, i.e. to one StepTable entry. A memory record with no such mapping falls back to the
// step whose host interval [host_start_ns, host_end_ns) holds its timestamp (first in table
// order), if any. Kernels, memcpys and memsets are attributed by correlation only (they run
// asynchronously, so their device timestamps say nothing about which host step launched them).
//
// Whose memory. An allocation whose correlation id also has a kAllocator external correlation
// was made by memplan's device allocator; every other device allocation (cuBLAS/cuBLASLt
// workspaces, library handles) is "library" memory the allocator never saw. Memory in use before
// the trace started (CUDA context, module images) is not in the trace at all; the caller passes it
// as AttributionOptions::baseline_device_bytes (cudaMemGetInfo before the run).
//
// Memory records are replayed in timestamp order (ties keep trace order); only kinds that live in
// device memory count (CountsAsDeviceMemory). A release of an address the trace never saw
// allocated belongs to memory that predates the trace and is ignored.

#include <cstdint>
#include <string>
#include <unordered_map>
#include <vector>

#include "graph/expected.h"
#include "profiler/activity_records.h"
#include "profiler/step_table.h"

namespace memplan::profiler {

struct AttributionOptions {
  // Device bytes in use before the trace began (context, modules, earlier allocations); added to
  // the device peak so it compares with what nvidia-smi and an out-of-memory error see.
  int64_t baseline_device_bytes = 0;
};

// One execution of one program step.
struct StepExecutionProfile {
  ProfiledStep step;
  // Summed durations of its kernels, memcpys and memsets (overlap is not subtracted).
  double device_seconds = 0;
  int64_t kernels = 0;
  int64_t allocated_bytes = 0;  // device memory allocated during it (allocator + libraries)
  int64_t freed_bytes = 0;      // device memory released during it
  // Peak, during the execution, of the live bytes it allocated that are scratch: released again
  // within the same execution, or allocated by a library rather than the allocator.
  int64_t workspace_bytes = 0;
};

// One graph node over all of its executions. Seconds are means per execution, so they compare
// with a cost model's per-micro-batch estimate whatever the accumulation steps.
struct NodeProfile {
  std::string node;
  int64_t forward_runs = 0;
  int64_t backward_runs = 0;
  int64_t recompute_runs = 0;
  double forward_seconds = 0;
  double backward_seconds = 0;
  double recompute_seconds = 0;
  int64_t workspace_bytes = 0;   // max over its executions
  int64_t activation_bytes = 0;  // its forward allocations live when backward began (max over
                                 // micro-batches)
};

struct AttributedProfile {
  std::vector<StepExecutionProfile> steps;  // step-table order
  std::vector<NodeProfile> nodes;           // order of first appearance in the step table

  // Device memory: baseline + peak of the replayed live bytes, and what was live at that moment.
  int64_t device_peak_bytes = 0;
  uint64_t device_peak_ns = 0;  // timestamp of the record that reached the peak (0: none)
  int64_t baseline_bytes = 0;
  int64_t allocator_bytes_at_peak = 0;
  int64_t library_bytes_at_peak = 0;
  int64_t allocator_peak_bytes = 0;  // peak of the allocator's own live bytes alone

  // Measured activation memory: per micro-batch, the allocator bytes allocated by its forward
  // steps that are still live at its backward boundary (the first memory record attributed to,
  // or the host start of, one of its backward/recompute steps; the end of the trace if there is
  // none); the max over micro-batches. Library memory is never an activation.
  int64_t activation_bytes = 0;

  double device_seconds = 0;        // every kernel, memcpy and memset in the trace
  double unattributed_seconds = 0;  // the part no step table entry claims
  uint64_t dropped_records = 0;
};

// Correlation id -> index into `steps`, from the trace's kStep external correlations (ids the
// table does not know are left out). Shared by attribution and the trace writer.
std::unordered_map<uint32_t, size_t> StepsByCorrelation(const ActivityTrace& trace,
                                                        const StepTable& steps);

// Errors: two table entries with one external id; an address allocated twice without a release
// in between (a corrupt or merged trace).
Expected<AttributedProfile> Attribute(const ActivityTrace& trace, const StepTable& steps,
                                      const AttributionOptions& options = {});

}  // namespace memplan::profiler
