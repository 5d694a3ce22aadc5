#pragma once
// The per-rank program (pass 6 of derivation, only with data parallelism): rewrites the
// single-GPU TrainingProgram into what one of N data-parallel ranks runs, so the simulator (and
// every report built on it) measures a rank. Nothing here is a side rule of an interpreter: each
// sharded state is a smaller buffer, each collective a kCollective step whose Begin/End events
// carry its memory.
//
//  * Sharding a state: the buffer keeps its id and role, its size becomes ceil(elements / N)
//    elements (per parameter, as DeepSpeed ZeRO-3 and FSDP2 pad each parameter; exact when N
//    divides the size).
//  * Optimizer state (all but ddp): Adam moments, master-gradient copies and, in mixed precision,
//    the fp32 masters are sharded in place. A ZeRO-1 rank reduces the full gradients at the start
//    of the optimizer phase; ZeRO-1/2 ranks all-gather the updated parameters after the step
//    (into the parameters themselves: no memory), ZeRO-3 ranks the parameters it keeps whole.
//  * Gradients (zero2, zero3, fsdp): each parameter gets a persistent gradient shard, the
//    accumulated gradient the optimizer reads; the full gradient lives only within a micro-batch.
//      - ZeRO-2/3 (DeepSpeed contiguous_gradients): a persistent reduce bucket of
//        zero_reduce_bucket_elements is allocated at setup; after its last accumulation a
//        kBucketCopy step copies a gradient into it (members back to back from offset 0) and
//        frees it; a reduce step per bucket reads the bucket and allocates the shards, its
//        outputs the members' shards in bucket order.
//      - FSDP: after a unit's last accumulation a reduce-scatter step copies the unit's gradients
//        into a reduce-scatter input (FSDP2 foreach_reduce), allocates the shards and frees both.
//  * Parameters (zero3, fsdp): the full buffers the compute steps read (working copies; fp32
//    masters where an op reads them) become transient "gathered" buffers; persistent shards take
//    their place in setup and in TrainingProgram::parameters. Parameters are grouped into units
//    (ZeRO-3: the parameters one op reads first, its module; FSDP: fsdp_min_unit_parameters). An
//    all-gather step allocates a unit's gathered buffers before its first forward step,
//    prefetch_units ahead; they are freed at the End of the unit's last forward step (reshard
//    after forward), gathered again before its first backward step and freed after its last
//    backward use. ZeRO-3 keeps parameters of at most zero3_param_persistence_threshold elements
//    whole.
//  * hybrid-shard: fsdp with N replaced by the GPUs of one node, G = N / nodes (every state is
//    ceil(elements / G)); its all-gathers and reduce-scatters run within the node
//    (CollectiveGroup::kWithinNode) and, on several nodes, each reduce-scatter is followed by an
//    in-place all-reduce of the unit's gradient shards among the nodes (kAcrossNodes).
//  * DDP: persistent gradient buckets (first 1 MiB, then 25 MiB, in gradient-ready order) are
//    allocated at setup; an all-reduce step follows each bucket's last accumulation. With
//    gradient_as_bucket_view the gradients are the buckets: allocated at setup, never freed.
//
// Because the walker checks every step's operands, "nothing used before it is gathered" and
// "nothing freed twice" are the program integrity check (analyzer/program/program_integrity.h).

#include <vector>

#include "analyzer/parallel/data_parallel_options.h"
#include "analyzer/program/training_program.h"
#include "graph/expected.h"

namespace memplan {

// `block_of_node`: by NodeId, the repeated block (analyzer/recompute/module_units.h) each node
// belongs to, -1 for none; read by FSDP's transformer wrap (options.fsdp_wrap_blocks: a unit per
// block, the other parameters in one root unit), may be empty otherwise.
// REQUIRES: `single` is a derived, verified single-GPU program (data_parallel_ranks == 1).
// Errors: ranks or nodes < 1, more nodes than ranks, a model without trainable parameters (no
// strategy applies), a parameter whose size is symbolic, the transformer wrap without blocks.
Expected<TrainingProgram> DerivePerRankProgram(TrainingProgram single,
                                               const DataParallelOptions& options,
                                               const std::vector<int>& block_of_node = {});

}  // namespace memplan
