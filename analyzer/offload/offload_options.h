#pragma once
// What --offload moves to pinned host memory and how the program moves it back (one Options
// struct for the offload passes: analyzer/derivation/host_offload.h for the optimizer modes,
// analyzer/derivation/saved_tensor_offload.h for activations). The time of the copies and of the
// CPU optimizer step is analyzer/cost/offload_cost.h.

#include <cstdint>

#include "analyzer/vocabulary/offload_hooks.h"
#include "analyzer/vocabulary/offload_mode.h"

namespace memplan {

struct OffloadOptions {
  OffloadMode mode = OffloadMode::kNone;
  // optimizer+params: parameter units brought to the GPU ahead of the one computing, in forward
  // order during forward and backward order during backward, as FSDP's forward/backward prefetch
  // and ZeRO-3's prefetch do: 1 keeps two units' parameters on the GPU at a time.
  int64_t prefetch_units = 1;
  // activations: the saved_tensors_hooks that move them (--offload-hooks): save_on_cpu's, or
  // torchtune's OffloadActivations with or without its second stream
  // (analyzer/derivation/saved_tensor_offload.h states each rule).
  OffloadHooks hooks = OffloadHooks::kSaveOnCpu;

  bool operator==(const OffloadOptions&) const = default;
};

}  // namespace memplan
