#pragma once
// How the training step is spread over data-parallel ranks (--parallel). Each strategy names what
// every rank keeps whole and what it keeps 1/N of (ZeRO paper, Rajbhandari et al. 2020, with Ψ
// parameters and K bytes of optimizer state per parameter, fp16 mixed precision):
//
//   strategy  parameters  gradients  optimizer state (masters + moments)  model states per rank
//   ddp       whole       whole      whole                               (2 + 2 + K) Ψ
//   zero1     whole       whole      1/N                                 (2 + 2) Ψ + K Ψ / N
//   zero2     whole       1/N        1/N                                 2 Ψ + (2 + K) Ψ / N
//   zero3     1/N         1/N        1/N                                 (2 + 2 + K) Ψ / N
//   fsdp      1/N         1/N        1/N  (PyTorch FSDP FULL_SHARD / FSDP2 fully_shard)
//   hybrid-shard  1/G     1/G        1/G  G = N / nodes, the GPUs of one node
//
// hybrid-shard is PyTorch FSDP HYBRID_SHARD (FSDP2: fully_shard over a 2-D DeviceMesh
// (replicate, shard)): fsdp within each node, replicas across nodes, so the per-unit all-gathers
// and reduce-scatters stay on the intra-node link and only the 1/G gradient shard crosses the
// network (one all-reduce among the M nodes). With one node it is fsdp.
//
// "auto" is not a strategy: the CLI asks the planner to try each and keep the fastest that fits.

#include <cstdint>
#include <string_view>

#include "analyzer/vocabulary/name_table.h"

namespace memplan {

#define MEMPLAN_PARALLEL_STRATEGIES(X)                                                             \
  /* torch DistributedDataParallel: replicas, gradient buckets all-reduced in backward */          \
  X(kDdp, "ddp")                                                                                   \
  X(kZero1, "zero1") /* DeepSpeed ZeRO stage 1: optimizer state (and fp32 masters) partitioned */  \
  X(kZero2, "zero2") /* DeepSpeed ZeRO stage 2: + gradients partitioned (reduce buckets) */        \
  X(kZero3, "zero3") /* DeepSpeed ZeRO stage 3: + parameters partitioned, gathered per module */   \
  X(kFsdp, "fsdp")   /* PyTorch FSDP (FULL_SHARD) / FSDP2: parameters gathered per wrapped unit */ \
  /* PyTorch FSDP HYBRID_SHARD / FSDP2 2-D mesh: fsdp within a node, replicated */                 \
  X(kHybridShard, "hybrid-shard")
MEMPLAN_VOCABULARY(ParallelStrategy, MEMPLAN_PARALLEL_STRATEGIES, "parallel strategy");

// PyTorch FSDP's engine (FULL_SHARD or HYBRID_SHARD): units gathered, reduce-scattered per unit.
inline bool IsFsdp(ParallelStrategy s) {
  return s == ParallelStrategy::kFsdp || s == ParallelStrategy::kHybridShard;
}

// What a strategy shards (the table above).
inline bool ShardsOptimizerState(ParallelStrategy s) { return s != ParallelStrategy::kDdp; }
inline bool ShardsGradients(ParallelStrategy s) {
  return s == ParallelStrategy::kZero2 || s == ParallelStrategy::kZero3 || IsFsdp(s);
}
inline bool ShardsParameters(ParallelStrategy s) {
  return s == ParallelStrategy::kZero3 || IsFsdp(s);
}
// Shards only within a node and replicates across nodes (the sharding degree is N / nodes).
inline bool ShardsWithinNode(ParallelStrategy s) { return s == ParallelStrategy::kHybridShard; }

}  // namespace memplan
