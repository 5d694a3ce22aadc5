#pragma once
// Time of what --offload adds to a step: the copies between GPU and pinned host memory (the
// kTransfer steps of analyzer/derivation/host_offload.h and saved_tensor_offload.h) over the host
// link of analyzer/cost/interconnect.h, how much of it the compute hides, and the optimizer
// step on the CPU.
//
// One transfer of S bytes (its device-side buffers, Step::transfer) on a link of B bytes/s:
//
//   seconds = S / (B x copy_efficiency) + latency (the link's per-copy latency)
//
// Overlap, as the engines issue the copies (TransferOverlap):
//  * kForward / kBackward copies run on a side stream while that phase computes (ZeRO-3 and FSDP
//    prefetch parameters, ZeRO-Offload copies gradient buckets during backward): a phase costs
//    max(0, copies - compute) extra per micro-batch. The optimizer phase's kBackward copy (the
//    gradients ZeRO-Offload moves once per step) hides behind the last micro-batch's backward,
//    together with that micro-batch's own backward copies;
//  * kNone copies are waited for (save_on_cpu's pack and unpack on the compute stream, the
//    parameters copied back after a CPU optimizer step): all of their time is added;
//  * body copies happen every micro-batch (k per step), optimizer-phase copies once.
//
// The CPU optimizer step (OffloadsOptimizer) is bound by host memory bandwidth, as DeepSpeed's
// vectorised CPU Adam is: it reads the updated copy, the gradient and the state and writes the
// copy and the state back (2 x parameter + gradient + 2 x state bytes, plus the half working copy
// it writes when that copy lives on the host), at host_memory_bytes_per_second. It is not
// overlapped (DeepSpeed's delayed parameter update, which would overlap it, is off by default).
//
// Like the roofline, this ranks plans; it does not predict wall-clock time
// (analyzer/cost/cost_model.h).

#include <cstdint>
#include <vector>

#include "analyzer/cost/cost_model.h"
#include "analyzer/cost/interconnect.h"
#include "analyzer/program/training_program.h"

namespace memplan {

struct OffloadCostOptions {
  // The GPU's link to host memory; a link with no bandwidth is DefaultHostLink(gpu) (the planner
  // resolves it: ResolvedOffloadCostOptions in analyzer/planning/planner.h).
  Interconnect host_link;
  // Fraction of the link's rate a copy between device and pinned host memory reaches: CUDA's
  // bandwidthTest sample reports about 25 GB/s of PCIe 4.0 x16's 31.5 and about 50 of PCIe 5.0's
  // 63, i.e. 0.8.
  double copy_efficiency = 0.8;
  // Host memory bandwidth the CPU optimizer streams at. An assumption, not a measurement: a
  // two-socket server with 8 DDR4-3200 channels per socket peaks at 2 x 204.8 GB/s; a vectorised
  // update streaming five arrays reaches a fraction of that, and 100 GB/s is the middle of the
  // range such servers sustain in STREAM-like loops. Workstations have less (two channels of
  // DDR5-4800 peak at 76.8 GB/s): pass their figure when it matters.
  double host_memory_bytes_per_second = 100e9;
};

struct OffloadEstimate {
  int64_t transfer_bytes = 0;           // over the host link per optimizer step (k micro-batches)
  double transfer_seconds = 0;          // all of it
  double exposed_transfer_seconds = 0;  // what the compute does not hide (added to the step)
  int64_t host_optimizer_bytes = 0;     // host memory the CPU optimizer step streams
  double host_optimizer_seconds = 0;    // the CPU optimizer step (added to the step)
};

// Seconds of one copy of `bytes` over `options.host_link`.
double TransferSeconds(int64_t bytes, const OffloadCostOptions& options);

// REQUIRES: `buffer_bytes` the evaluated size of every buffer of `program`; `compute` the step
// estimate of the same program at k = `accumulation_steps` (its forward, backward and recompute
// per micro-batch); options.host_link resolved. A program without transfers costs nothing.
OffloadEstimate EstimateOffload(const TrainingProgram& program,
                                const std::vector<int64_t>& buffer_bytes,
                                int64_t accumulation_steps, const StepTimeEstimate& compute,
                                const OffloadCostOptions& options);

}  // namespace memplan
