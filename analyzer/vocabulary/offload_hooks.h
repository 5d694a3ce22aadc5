#pragma once
// Which saved_tensors_hooks move the saved tensors with --offload activations: the rule each
// implementation follows is stated once, in analyzer/derivation/saved_tensor_offload.h.

#include <string_view>

#include "analyzer/vocabulary/name_table.h"

namespace memplan {

#define MEMPLAN_OFFLOAD_HOOKS(X)                                                                 \
  /* torch.autograd.graph.save_on_cpu(pin_memory=True): every saved tensor, around the whole */  \
  /* step (loss included). */                                                                    \
  X(kSaveOnCpu, "save-on-cpu")                                                                   \
  /* torchtune's OffloadActivations(use_streams=False) around the model's forward: tensors of */ \
  /* >= 1024 bytes that are not an nn.Parameter, the output head under NoOpManager. */           \
  X(kTorchtune, "torchtune")                                                                     \
  /* the same with use_streams=True, what enable_activation_offloading builds: the copies run */ \
  /* on a second stream, so offloaded tensors stay on the GPU a while longer. */                 \
  X(kTorchtuneStreams, "torchtune-streams")                                                      \
  /* Unsloth's use_gradient_checkpointing="unsloth" (UnslothCheckpointFunction): no hooks; */    \
  /* each reentrant-checkpointed layer's input hidden states but the last layer's. */            \
  X(kUnsloth, "unsloth")
// "torchtune" -> kTorchtune; error "unknown offload hooks 'x' (choose one of: save-on-cpu,
// torchtune, torchtune-streams, unsloth)".
MEMPLAN_VOCABULARY(OffloadHooks, MEMPLAN_OFFLOAD_HOOKS, "offload hooks");

inline bool IsTorchtuneHooks(OffloadHooks hooks) {
  return hooks == OffloadHooks::kTorchtune || hooks == OffloadHooks::kTorchtuneStreams;
}

}  // namespace memplan
