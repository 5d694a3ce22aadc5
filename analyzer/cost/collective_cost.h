#pragma once
// Time of the collectives a per-rank program runs (analyzer/derivation/rank_sharding.h), on the
// links of analyzer/cost/interconnect.h, and how much of it the compute hides.
//
// One collective over N ranks, ring algorithm (what NCCL uses for large messages), S = the full
// payload (Collective::payload_bytes), B = the link's bandwidth x bus_efficiency:
//
//   all-reduce       2 (N - 1) / N * S / B  +  2 (N - 1) hops of latency
//   reduce-scatter       (N - 1) / N * S / B  +      (N - 1) hops
//   all-gather           (N - 1) / N * S / B  +      (N - 1) hops
//
// With the ranks on several nodes every ring crosses the network, so B is the slower of the
// intra- and inter-node links (one adapter per GPU) and the hop latency the larger.
// A collective of a smaller group (Collective::group, hybrid-shard) runs on its own link: within
// a node, N / nodes ranks on the intra-node link; across nodes, `nodes` ranks (this rank and its
// peers on the other nodes) on the inter-node link, each GPU's ring on its own adapter.
//
// Overlap, as the engines do it (communication on its own stream):
//  * collectives of the forward (ZeRO-3/FSDP prefetched all-gathers) hide behind the forward
//    compute, those of the backward (gradient buckets, reduce-scatters, backward all-gathers)
//    behind the backward and recompute compute: a phase costs max(0, comm - compute) extra;
//  * collectives of the optimizer phase (ZeRO-1 reduce, the all-gather of updated parameters
//    ZeRO-1/2/3 keep whole) are not hidden;
//  * DDP all-reduces only the last micro-batch of an accumulation (no_sync on the others, as
//    Accelerate's accumulate() and the HF Trainer do); the ZeRO stages and FSDP reduce every
//    micro-batch (their gradients are sharded, so they cannot wait).

#include <cstdint>

#include "analyzer/cost/cost_model.h"
#include "analyzer/cost/interconnect.h"
#include "analyzer/program/training_program.h"

namespace memplan {

struct CollectiveCostOptions {
  Interconnect intra_node;  // planner default: DefaultIntraNodeLink(gpu)
  Interconnect inter_node;  // planner default: DefaultInterNodeLink()
  int64_t nodes = 1;        // > 1: rings cross inter_node
  // Fraction of the link bandwidth NCCL reaches for large messages (nccl-tests busbw over the
  // datasheet rate is 0.75-0.9 on NVLink and InfiniBand).
  double bus_efficiency = 0.8;
};

// Seconds of one collective of `payload_bytes` over `ranks` ranks; 0 for one rank.
double CollectiveSeconds(CollectiveKind kind, int64_t payload_bytes, int64_t ranks,
                         const CollectiveCostOptions& options);

// Seconds of the collective `c` in a program of `ranks` data-parallel ranks: its group's rank
// count and link (see above).
double CollectiveSeconds(const Collective& c, int64_t ranks, const CollectiveCostOptions& options);

struct CommunicationEstimate {
  // Per micro-batch, summed over the collectives of each phase.
  double forward_seconds = 0;
  double backward_seconds = 0;
  // Per optimizer step.
  double optimizer_seconds = 0;
  // Per optimizer step: what compute does not hide (added to the step time).
  double exposed_seconds = 0;
  // Per optimizer step, all of it (what a profile would show on the communication stream).
  double total_seconds = 0;
};

// REQUIRES: `compute` is the step estimate of the same program at k = `accumulation_steps`.
// A single-GPU program (data_parallel_ranks == 1) costs nothing.
CommunicationEstimate EstimateCommunication(const TrainingProgram& program,
                                            int64_t accumulation_steps,
                                            const StepTimeEstimate& compute,
                                            const CollectiveCostOptions& options);

}  // namespace memplan
