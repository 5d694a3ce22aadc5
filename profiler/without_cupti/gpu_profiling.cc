// profiler/gpu_profiling.h for a build without CUDA: there is never a device to profile on.
#include "profiler/gpu_profiling.h"

namespace memplan::profiler {

bool GpuProfilingAvailable() { return false; }

Expected<ProfiledRun> ProfileOnGpu(const Graph& graph, const TrainingProgram& program,
                                   const Bindings& bindings, int64_t micro_batch,
                                   int optimizer_steps) {
  (void)graph, (void)program, (void)bindings, (void)micro_batch, (void)optimizer_steps;
  return MakeError(kNoGpuForProfiling);
}

}  // namespace memplan::profiler
