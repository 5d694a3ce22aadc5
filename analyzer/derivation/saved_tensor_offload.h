#pragma once
// --offload activations: saved_tensors_hooks that move saved tensors to pinned host memory, as
// program steps. Step emission (step_emission.h) calls it for every op that saves tensors for
// backward; the steps it writes are ordinary kTransfer steps, so liveness, the walker and the
// simulator need no rule of their own. --offload-hooks picks the implementation.
//
// save-on-cpu: torch.autograd.graph.save_on_cpu(pin_memory=True) around the whole step. Its pack
// hook runs once per tensor an op saves, when the op's forward saves it: it allocates a pinned
// host tensor and copies the GPU tensor into it (a blocking copy on the compute stream). Autograd
// then holds only the host copy, so the GPU tensor is freed after its last forward use. Two ops
// saving one tensor make two host copies. The unpack hook runs when the op's backward needs the
// tensor: `packed.to(device, non_blocking=True)`, a new GPU tensor made on the compute stream,
// released with the host copy once that backward step has run:
//
//   forward op F (saves a) ─► pack F: +a@host(F)          (a on the GPU until its last forward use)
//   ...
//   unpack F: +a@F ◄─ a@host(F)  ─► backward F reads a@F  ─► End: -a@F -a@host(F)
//
// Parameters an op saves are packed too (save_on_cpu does not tell them apart), so their copies
// travel and their unpacked copy is a second, transient copy on the GPU during that backward.
// Neither copy overlaps compute (TransferOverlap::kNone): the pack is synchronous and the backward
// kernel waits for the unpack on the same stream.
//
// torchtune: training.OffloadActivations (torchtune/training/_activation_offloading.py) around
// the model's forward only, as the recipes run it (`with self.activations_handling_ctx: logits =
// self._model(...)`; the loss runs outside). Its pack hook gives every tensor it sees an id and
// moves it only when it has >= kTorchtuneMinOffloadBytes (min_offload_size) and is not an
// nn.Parameter (a parameter an op saves itself: a view of one, such as linear's weight.t(), is
// no Parameter and moves). What the caller passes:
//   * the output head (the op producing the loss's logits) runs under NoOpManager: its saves
//     never reach the hook and stay on the GPU; the loss's saves are outside the context;
//   * with module recompute (torchtune's activation checkpointing, non-reentrant), the ops of a
//     checkpointed block save through torch.utils.checkpoint's own hooks and never reach it; the
//     checkpoint saves the block's tensor inputs (_NoopSaveInputs) through it instead, and the
//     block's re-run in backward reads them back (the unpacked copy then lives as long as the
//     re-created tensors that view it: record_stream in the unpack's node hook).
// The threshold is decided when the program is derived, and one derived program serves every
// micro-batch the search tries: a size that depends on the batch or a --dim symbol counts as
// large and moves (at the planned shapes torch keeps such a tensor when it has under 1024
// bytes: at most 1023 bytes each that memplan plans on the host instead of the GPU).
// use_streams=False ("torchtune"): the copies run on the compute stream and the unpacked tensor
// is released after its backward step, as save_on_cpu's.
// use_streams=True ("torchtune-streams", what enable_activation_offloading builds):
//   * forward: the GPU tensor stays in fwd_stash until a later offloading pack whose id is at
//     least its id + kTorchtuneMaxForwardStash (max_fwd_stash_size; every tensor the hook sees
//     takes an id); what is still stashed when forward ends stays until the first backward node
//     that unpacks an offloaded tensor has run, and an unpack of a stashed tensor returns the GPU
//     tensor itself (no copy back);
//   * backward: a copy brought back is kept in bwd_tensor_stash until the next node that unpacks
//     an offloaded tensor has run (that node's hook frees the previous node's), one node longer
//     than save_on_cpu's.
//
// unsloth: use_gradient_checkpointing="unsloth" (unsloth_zoo/gradient_checkpointing.py,
// UnslothCheckpointFunction, which replaces torch.utils.checkpoint.CheckpointFunction; its
// unsloth_checkpoint forces use_reentrant=True), so it only runs with reentrant module recompute
// and there are no saved_tensors_hooks: the layers' own saves are dropped by the checkpoint, the
// rest (head, loss) stay on the GPU. What moves is each checkpointed layer's first tensor
// argument, the decoder layer's input hidden states (the mask and rotary tables travel in the
// partial HF passes), taken by memplan as the first tensor the layer's first op reads:
//   * only when its stored bytes exceed kUnslothMinimumBytes (MINIMUM_SIZE; float32 is stored as
//     bfloat16 unless UNSLOTH_OFFLOAD_FP32=exact, so numel x 2) and it is not the input of the
//     step's last checkpointed layer (LAST_GC_INDEX: from the second step on the last layer
//     keeps its input, torchtune PR 1443); a symbolic size counts as large;
//   * the host side is a pinned slot of CPU_BUFFERS in the stored dtype, made once and reused;
//     the GPU input is freed after the layer's no_grad forward (nothing else holds it);
//   * in backward the slot is copied into a persistent GPU staging buffer, GPU_BUFFERS and
//     GPU_BUFFERS_B alternating (double buffering, on from the second step when the GPU has more
//     than 512 MiB free), each grown to the largest stored size (the first moved input's: a
//     decoder stack's inputs share one shape; they start at 2 MiB and every moved input exceeds
//     that). The re-run reads the staging buffer itself (no allocation) when the stored dtype is
//     the input's, else `buffer.to(float32)`, a new GPU tensor, freed after the re-run's use.
// Not modelled: UNSLOTH_OFFLOAD_FP32=exact, integrated GPUs (no second staging buffer),
// UNSLOTH_GC_PREFETCH, the first step (every layer moves, one staging buffer).

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "analyzer/derivation/program_builder.h"
#include "analyzer/vocabulary/offload_hooks.h"
#include "graph/dtype.h"

namespace memplan {

// OffloadActivations' defaults, which get_act_offloading_ctx_manager keeps.
inline constexpr int64_t kTorchtuneMinOffloadBytes = 1024;
inline constexpr int64_t kTorchtuneMaxForwardStash = 5;
// UnslothCheckpointFunction's MINIMUM_SIZE (initialize_unsloth_gradient_checkpointing).
inline constexpr int64_t kUnslothMinimumBytes = int64_t{2} * 1024 * 1024;

class SavedTensorOffload {
 public:
  SavedTensorOffload(ProgramBuilder& builder, OffloadHooks hooks)
      : builder_(builder), hooks_(hooks) {}

  // Whether the hooks move a saved tensor of `bytes` (nullopt: symbolic, taken as large) that
  // is (or is not) an nn.Parameter itself.
  bool Moves(std::optional<int64_t> bytes, bool is_parameter) const;

  // --offload-hooks unsloth: whether a checkpointed layer's input of `bytes` (nullopt: symbolic,
  // taken as large) and `dtype` moves, and the dtype its host slot stores it in.
  static bool UnslothMoves(std::optional<int64_t> bytes, DType dtype);
  static DType UnslothStoredDtype(DType dtype);

  // Appends a "pack <name>" step after the forward (or loss) step of `node` that saves `saved`:
  // every valid entry is one call of the pack hook (in order), those `moves` marks get a pinned
  // host buffer, allocated there and held for backward. Returns them aligned with `saved`
  // (invalid where nothing moved). No step when nothing moves.
  std::vector<BufferId> Pack(const std::string& name, NodeId node,
                             const std::vector<BufferId>& saved, const std::vector<bool>& moves);
  // Appends an "unpack <name>" step before the backward step of `node`: one device copy of each
  // valid host buffer (torchtune-streams: the GPU tensor itself while it is still stashed).
  // Returns them aligned with `host`; the caller's backward step reads them, so liveness frees
  // them at its End unless `held_to_next_node` (torchtune-streams) keeps them until the next
  // node that unpacks has run (AtBackwardStep). No step when nothing is copied.
  std::vector<BufferId> Unpack(const std::string& name, NodeId node,
                               const std::vector<BufferId>& host, bool held_to_next_node = true);
  // Called in every backward step. torchtune-streams: when the node unpacked an offloaded
  // tensor since the last call (its own, or a checkpointed module's input for the re-run it
  // triggers), that node's hook frees the previous such node's copies and what forward left
  // stashed: they live through this step.
  void AtBackwardStep();

 private:
  struct Stashed {
    int64_t id;
    BufferId device;
    BufferId host;
  };
  bool Streams() const { return hooks_ == OffloadHooks::kTorchtuneStreams; }
  std::vector<BufferId> PackUnsloth(const std::string& name, NodeId node,
                                    const std::vector<BufferId>& sources);
  std::vector<BufferId> UnpackUnsloth(const std::string& name, NodeId node,
                                      const std::vector<BufferId>& host);

  ProgramBuilder& builder_;
  OffloadHooks hooks_;
  int64_t last_id_ = 0;                  // the pack hook's tensor ids
  std::vector<Stashed> forward_stash_;   // fwd_stash, in id order
  std::vector<BufferId> this_node_;      // copies brought back for the node being unpacked
  std::vector<BufferId> previous_node_;  // bwd_tensor_stash of the previous unpacking node
  bool unpacked_for_node_ = false;       // an Unpack since the last AtBackwardStep
  // unsloth: the forward tensor of each host slot, and the two staging buffers (made at the
  // first pack) the unpacks alternate between.
  std::vector<std::pair<BufferId, BufferId>> unsloth_sources_;  // (host, forward tensor)
  BufferId staging_[2];
  int next_staging_ = 0;
};

}  // namespace memplan
