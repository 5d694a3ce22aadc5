// profiler/gpu_profiling.h on a CUDA build: the CUDA backend, observed step by step, under CUPTI.
#include "profiler/gpu_profiling.h"

#include <memory>
#include <vector>

#include "profiler/cupti/cupti_collector.h"
#include "profiler/cupti/step_correlation.h"
#include "runtime/cuda/cuda_backend.h"
#include "runtime/cuda/device_query.h"
#include "runtime/executor.h"
#include "runtime/program_shapes.h"
#include "runtime/weight_init.h"

namespace memplan::profiler {

bool GpuProfilingAvailable() { return cuda::DeviceCount() > 0; }

Expected<ProfiledRun> ProfileOnGpu(const Graph& graph, const TrainingProgram& program,
                                   const Bindings& bindings, int64_t micro_batch,
                                   int optimizer_steps) {
  if (!GpuProfilingAvailable()) return MakeError(kNoGpuForProfiling);
  const Bindings bound = WithBatch(bindings, program.batch_symbol, micro_batch);
  ProfiledRun run;
  MEMPLAN_TRY(std::unique_ptr<CuptiCollector> collector, CuptiCollector::Start());
  AllocatorCorrelation allocator_correlation(*collector);
  StepCorrelation step_correlation(*collector, program);  // outlives the backend it observes
  CudaBackendOptions backend_options;
  backend_options.allocator_observer = &allocator_correlation;
  MEMPLAN_TRY(std::unique_ptr<Backend> backend, MakeCudaBackend(backend_options));
  // The CUDA context exists now; what it holds is the baseline the trace cannot see.
  run.baseline_device_bytes = cuda::DeviceBytesInUse();
  run.device_name = cuda::CurrentDeviceName();
  backend->set_step_observer(&step_correlation);
  {
    MEMPLAN_TRY(SyntheticData data, SyntheticData::Create(graph, program, bound, 0));
    std::vector<MicroBatch> batches;
    for (int64_t i = 0; i < program.accumulation_steps; ++i) {
      MEMPLAN_TRY(MicroBatch b, data.Batch(i * micro_batch, micro_batch));
      batches.push_back(std::move(b));
    }
    MEMPLAN_TRY(std::unique_ptr<Executor> executor,
                Executor::Create(graph, program, bound, *backend, ExecutorOptions{}));
    for (int s = 0; s < optimizer_steps; ++s) {
      MEMPLAN_TRY(StepRecord record, executor->RunOptimizerStep(batches));
      (void)record;
    }
  }  // the executor releases its buffers inside the trace
  MEMPLAN_RETURN_IF_ERROR(step_correlation.Finish());
  MEMPLAN_RETURN_IF_ERROR(allocator_correlation.status());
  MEMPLAN_TRY(run.trace, collector->Stop());
  run.steps = step_correlation.steps();
  return run;
}

}  // namespace memplan::profiler
