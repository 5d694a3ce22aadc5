#pragma once
// Running a training program on the GPU under CUPTI: what `memplan profile` measures. The CLI
// asks here, never the CUDA runtime: a build with MEMPLAN_CUDA compiles profiler/cupti/
// gpu_profiling.cc; a build without it compiles profiler/without_cupti/gpu_profiling.cc, where no
// device is ever available. CMake picks the file, so no code asks the preprocessor.

#include <cstdint>
#include <string>

#include "analyzer/program/training_program.h"
#include "graph/expected.h"
#include "graph/graph.h"
#include "graph/symbols.h"
#include "profiler/activity_records.h"
#include "profiler/step_table.h"

namespace memplan::profiler {

// What `memplan profile` says when it cannot run: no CUDA build, no driver or no device.
inline constexpr const char* kNoGpuForProfiling =
    "no CUDA device available (profiling needs a GPU)";

// Whether this build has CUPTI and the machine a CUDA device.
bool GpuProfilingAvailable();

struct ProfiledRun {
  ActivityTrace trace;
  StepTable steps;  // one entry per step execution, in order
  // Device bytes in use once the CUDA context exists (context, modules): the baseline the trace
  // cannot see.
  int64_t baseline_device_bytes = 0;
  std::string device_name;  // "NVIDIA H100 80GB HBM3"; "cuda" when the driver does not say
};

// Runs `optimizer_steps` optimizer steps of `program` (micro-batches of `micro_batch` rows of
// synthetic data, `bindings` binding every other symbol) on the CUDA backend under the CUPTI
// collector. Errors: kNoGpuForProfiling, CUPTI and CUDA failures, executor errors.
Expected<ProfiledRun> ProfileOnGpu(const Graph& graph, const TrainingProgram& program,
                                   const Bindings& bindings, int64_t micro_batch,
                                   int optimizer_steps);

}  // namespace memplan::profiler
