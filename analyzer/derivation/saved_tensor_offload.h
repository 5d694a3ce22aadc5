#pragma once
// --offload activations: torch.autograd.graph.save_on_cpu(pin_memory=True) as program steps.
// Step emission (step_emission.h) calls it for every op that saves tensors for backward; the
// steps it writes are ordinary kTransfer steps, so liveness, the walker and the simulator need
// no rule of their own.
//
// save_on_cpu's pack hook runs once per tensor an op saves, when the op's forward saves it: it
// allocates a pinned host tensor and copies the GPU tensor into it (a blocking copy on the
// compute stream). Autograd then holds only the host copy, so the GPU tensor is freed after its
// last forward use. Two ops saving one tensor make two host copies. The unpack hook runs when the
// op's backward needs the tensor: `packed.to(device, non_blocking=True)`, a new GPU tensor made
// on the compute stream, released with the host copy once that backward step has run:
//
//   forward op F (saves a) ─► pack F: +a@host(F)          (a on the GPU until its last forward use)
//   ...
//   unpack F: +a@F ◄─ a@host(F)  ─► backward F reads a@F  ─► End: -a@F -a@host(F)
//
// Parameters an op saves are packed too (save_on_cpu does not tell them apart), so their copies
// travel and their unpacked copy is a second, transient copy on the GPU during that backward.
// Neither copy overlaps compute (TransferOverlap::kNone): the pack is synchronous and the backward
// kernel waits for the unpack on the same stream.

#include <string>
#include <vector>

#include "analyzer/derivation/program_builder.h"

namespace memplan {

class SavedTensorOffload {
 public:
  explicit SavedTensorOffload(ProgramBuilder& builder) : builder_(builder) {}

  // Appends a "pack <name>" step after the forward (or loss) step of `node` that saves `saved`:
  // one pinned host buffer per valid entry, allocated there and held for backward. Returns them
  // aligned with `saved` (invalid where the entry is invalid). No step when nothing is valid.
  std::vector<BufferId> Pack(const std::string& name, NodeId node,
                             const std::vector<BufferId>& saved);
  // Appends an "unpack <name>" step before the backward step of `node`: one device copy of each
  // valid host buffer. Returns the copies aligned with `host`; the caller's backward step reads
  // them, so liveness frees both at its End. No step when nothing is valid.
  std::vector<BufferId> Unpack(const std::string& name, NodeId node,
                               const std::vector<BufferId>& host);

 private:
  ProgramBuilder& builder_;
};

}  // namespace memplan
