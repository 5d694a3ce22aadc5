#pragma once
// bitsandbytes' paged optimizers (--optimizer paged-adamw8bit): where their state lives, and what
// of it the GPU holds.
//
// From bitsandbytes' source (optim/optimizer.py, functional.py, cextension):
//   * Optimizer8bit.get_state_buffer(p) allocates state1/state2 with F.get_paged(...) when the
//     optimizer is paged and p.numel() >= 1e5, else torch.zeros on the device; the absmax are
//     always device tensors.
//   * F.get_paged calls lib.cget_managed_ptr, i.e. cudaMallocManaged: CUDA unified memory,
//     outside PyTorch's caching allocator. The tensor never appears in memory_reserved() or
//     max_memory_allocated(), and an allocation that finds the device full does not fail because
//     of it: the driver evicts managed pages to the host to make room.
//   * Before each parameter's update, prefetch_state (F.prefetch_tensor -> cudaMemPrefetchAsync)
//     moves its paged state to the device, one parameter at a time (step()'s all-at-once
//     page_mng.prefetch_all() is commented out).
//
// So the caching allocator's peak is the plan's device peak without the paged state, and the fit
// decision is that peak against the budget. The paged state is resident in the room the budget
// leaves above that peak; what does not fit there is evicted to the host while forward and
// backward run and prefetched back before the step: about twice the evicted bytes cross the host
// link per optimizer step.
//
// The program places the paged state in MemorySpace::kHost (it takes no room in the allocator's
// pool: the simulator's device peak, breakdown and fits leave it out) and the report says how much
// of it stays resident (PagedStateResidency).

#include <cstdint>

#include "analyzer/program/training_program.h"

namespace memplan {

// bitsandbytes pages a state only for parameters of at least this many elements
// (get_state_buffer: `if not self.is_paged or p.numel() < 1e5`).
inline constexpr int64_t kPagedMinElements = 100000;

// Whether optimizer state `index` of `parameter` is paged: state1 and state2 (the first two,
// analyzer/program/optimizer_state.h) of a parameter of >= kPagedMinElements elements under a
// paged optimizer.
bool IsPagedOptimizerState(const TrainingProgram& program, const ParameterBuffers& parameter,
                           size_t index);

// Moves the paged states of `program` to MemorySpace::kHost (nothing for other optimizers).
void PlacePagedOptimizerState(TrainingProgram& program);

struct PagedStateResidency {
  int64_t paged_bytes = 0;     // state1/state2 bytes in unified memory
  int64_t resident_bytes = 0;  // on the GPU: min(paged, room the budget leaves above the peak)
  int64_t evicted_bytes = 0;   // paged - resident: on the host while forward/backward run
  // Evicted bytes moved back before each optimizer step and out again: 2 x evicted.
  int64_t host_traffic_bytes_per_step = 0;
};

// `device_peak_bytes`: the plan's peak without the paged state (the caching allocator's reserved
// peak under --allocator caching); `budget_bytes`: GPU memory less context and reserve.
PagedStateResidency PagedStateResidencyOf(int64_t paged_bytes, int64_t device_peak_bytes,
                                          int64_t budget_bytes);

}  // namespace memplan
