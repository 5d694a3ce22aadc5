#pragma once
// What moves to pinned host memory (--offload), with the engine each mode mirrors. What each mode
// implies for the training program is stated once, in analyzer/derivation/host_offload.h
// (optimizer, optimizer+params) and analyzer/derivation/saved_tensor_offload.h (activations);
// the transfer and CPU-optimizer time in analyzer/cost/offload_cost.h.

#include <cstdint>
#include <string_view>

#include "analyzer/vocabulary/name_table.h"

namespace memplan {

#define MEMPLAN_OFFLOAD_MODES(X)                                                                   \
  X(kNone, "none") /* everything on the GPU */                                                     \
  /* DeepSpeed ZeRO-Offload (zero_optimization.offload_optimizer.device = "cpu"): the optimizer */ \
  /* state and the copy of the parameters it updates live on the host, the optimizer step runs */  \
  /* on the CPU; gradients go down and updated parameters come back up every optimizer step. */    \
  X(kOptimizer, "optimizer")                                                                       \
  /* ZeRO-Infinity / ZeRO-3 offload_param, FSDP CPUOffload(offload_params=True): the */            \
  /* parameters too; each unit's are brought to the GPU for its forward and again for its */       \
  /* backward, and gradients go to the host as they are produced. */                               \
  X(kOptimizerAndParams, "optimizer+params")                                                       \
  /* torch.autograd.graph.save_on_cpu(pin_memory=True): every tensor saved for backward is */      \
  /* copied to the host when saved and back when its backward runs. */                             \
  X(kActivations, "activations")
// "optimizer" -> kOptimizer; error "unknown offload mode 'x' (choose one of: none, optimizer,
// optimizer+params, activations)".
MEMPLAN_VOCABULARY(OffloadMode, MEMPLAN_OFFLOAD_MODES, "offload mode");

// The optimizer step runs on the CPU over host-resident state.
inline bool OffloadsOptimizer(OffloadMode mode) {
  return mode == OffloadMode::kOptimizer || mode == OffloadMode::kOptimizerAndParams;
}

}  // namespace memplan
