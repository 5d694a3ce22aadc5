#include "analyzer/program/paged_optimizer_state.h"

#include <algorithm>
#include <optional>

namespace memplan {

bool IsPagedOptimizerState(const TrainingProgram& program, const ParameterBuffers& parameter,
                           size_t index) {
  if (program.optimizer_kind != OptimizerKind::kPagedAdamW8bit || index >= 2 ||
      index >= parameter.optimizer_states.size() || !parameter.master.valid())
    return false;
  const std::optional<int64_t> n =
      program.buffer(parameter.master).shape.NumElements().constant_value();
  return n && *n >= kPagedMinElements;
}

void PlacePagedOptimizerState(TrainingProgram& program) {
  for (const ParameterBuffers& pb : program.parameters)
    for (size_t i = 0; i < pb.optimizer_states.size(); ++i)
      if (IsPagedOptimizerState(program, pb, i))
        program.buffers[pb.optimizer_states[i].index()].space = MemorySpace::kHost;
}

PagedStateResidency PagedStateResidencyOf(int64_t paged_bytes, int64_t device_peak_bytes,
                                          int64_t budget_bytes) {
  PagedStateResidency r;
  r.paged_bytes = paged_bytes;
  const int64_t room = std::max<int64_t>(0, budget_bytes - device_peak_bytes);
  r.resident_bytes = std::min(paged_bytes, room);
  r.evicted_bytes = paged_bytes - r.resident_bytes;
  r.host_traffic_bytes_per_step = 2 * r.evicted_bytes;
  return r;
}

}  // namespace memplan
