#pragma once
// Derivation pass 7, --offload optimizer and optimizer+params: rewrites a derived single-GPU
// program so the state these engines keep in pinned host memory lives there, and every copy over
// the host link is a kTransfer step whose Begin/End events carry its memory. The simulator then
// counts the GPU and the host apart (Buffer::space) and the cost model times the copies and the
// CPU optimizer step (analyzer/cost/offload_cost.h). --offload activations is not a rewrite:
// step emission writes it (saved_tensor_offload.h).
//
// optimizer (DeepSpeed ZeRO-Offload, offload_optimizer.device = "cpu"):
//  * the optimizer state moves to the host, and so does the copy of each trained parameter the
//    optimizer updates: the fp32 master under master weights (the GPU keeps the half working
//    copy), otherwise a host twin of the parameter in its dtype (DeepSpeed's fp32 partition; the
//    GPU keeps the parameter the forward reads);
//  * a host gradient in the updated copy's dtype (DeepSpeed's fp32 gradient partition) replaces
//    any fp32 master-gradient copy on the GPU;
//  * the GPU still accumulates the gradients over the k micro-batches; at the start of the
//    optimizer phase one transfer copies them to the host (it stands for the per-bucket copies
//    DeepSpeed issues during the last backward, so it overlaps backward), the optimizer step runs
//    on the CPU, and one transfer copies the updated parameters back into what the GPU reads
//    (not overlapped: the next forward needs them);
//  * GPU:  parameters + gradients (2 + 2 bytes per parameter with master weights);
//    host: updated copy + gradient + state (4 + 4 + 8 = 16 bytes per parameter with Adam),
//    DeepSpeed's estimate_zero2_model_states_mem_needs(cpu_offload=True) without its 1.5 buffer
//    factor.
//
// optimizer+params (ZeRO-3 offload_param, FSDP CPUOffload(offload_params=True)):
//  * every parameter, frozen ones too, lives on the host (master and working copy); the buffers
//    the compute steps read become transient GPU copies, brought over per unit before the unit's
//    forward and again before its backward, prefetch_units ahead, and freed after the unit's last
//    use in each phase (program_rewrite.h, the placement ZeRO-3 and FSDP gathers use). A unit is
//    the repeated block (analyzer/recompute/module_units.h: "h.5", "layer3.1") of the first op
//    that reads a parameter, FSDP's transformer auto-wrap unit; a parameter read first outside
//    every block is its own unit with the others that op reads first, ZeRO-3's module;
//  * each gradient goes to the host right after its last accumulation of the micro-batch and is
//    freed on the GPU; the host gradient accumulates the k micro-batches and becomes the
//    parameter's gradient (zero_grad frees it);
//  * the optimizer step runs on the CPU and updates the host copies; nothing comes back after it
//    (the next forward fetches the parameters);
//  * GPU: the largest units in flight (two with one prefetched) and their gradients until they
//    leave; host: 2 + 4 + 4 + 8 = 18 bytes per parameter with master-weights Adam, DeepSpeed's
//    estimate_zero3_model_states_mem_needs(cpu_offload=True, cpu_offload_params=True).

#include "analyzer/offload/offload_options.h"
#include "analyzer/program/training_program.h"
#include "graph/expected.h"
#include "graph/graph.h"

namespace memplan {

// REQUIRES: `program` is a derived, verified single-GPU program of `graph`. Returns it unchanged
// unless options.mode offloads the optimizer. Errors: a data-parallel program, a parameter whose
// size is symbolic.
Expected<TrainingProgram> OffloadToHost(TrainingProgram program, const Graph& graph,
                                        const OffloadOptions& options);

}  // namespace memplan
