#pragma once
// How one rank of a data-parallel group runs the training step: the strategy, the group size and
// every engine default that changes a rank's memory, each named after the engine setting it
// mirrors so an export can write it back unchanged (analyzer/config_export/).
//
// The per-rank program is derived from these by analyzer/derivation/rank_sharding.h; the cost of
// its collectives by analyzer/cost/collective_cost.h.

#include <cstdint>

#include "analyzer/vocabulary/parallel_strategy.h"

namespace memplan {

struct DataParallelOptions {
  ParallelStrategy strategy = ParallelStrategy::kDdp;
  int64_t ranks = 1;  // N: data-parallel ranks (GPUs) in the group; >= 1
  int64_t nodes = 1;  // machines the ranks span (the cost model's inter-node link); >= 1

  // DDP (torch.nn.parallel.DistributedDataParallel). bucket_cap_mb=25 is DDP's default and means
  // MiB; the first bucket is capped at dist._DEFAULT_FIRST_BUCKET_BYTES = 1 MiB so the first
  // all-reduce starts early. A bucket closes once it holds at least its cap.
  int64_t ddp_bucket_cap_bytes = int64_t{25} * 1024 * 1024;
  int64_t ddp_first_bucket_bytes = int64_t{1} * 1024 * 1024;
  // DDP gradient_as_bucket_view (default False): False keeps the buckets as a second copy of the
  // gradients (the Reducer allocates them at construction); True makes the gradients views into
  // the buckets, so only the buckets hold gradient bytes.
  bool ddp_gradient_as_bucket_view = false;

  // DeepSpeed ZeRO reduce_bucket_size (default 5e8 elements): stages 2 and 3 copy each ready
  // gradient into a flat bucket of this many elements (contiguous_gradients, default true), free
  // the gradient, and reduce the bucket to the owning ranks when the next gradient would not fit.
  // The bucket is allocated whole, in the gradient dtype, whatever the model size.
  int64_t zero_reduce_bucket_elements = 500'000'000;
  // DeepSpeed allgather_bucket_size (default 5e8 elements): stages 1 and 2 all-gather the updated
  // parameters after the step in chunks of this size, into the parameters themselves (no extra
  // memory); written to exports.
  int64_t zero_allgather_bucket_elements = 500'000'000;
  // DeepSpeed stage3_param_persistence_threshold (default 1e5 elements): ZeRO-3 parameters this
  // small are kept whole on every rank (never partitioned or gathered); their gradients and
  // optimizer state are still partitioned.
  int64_t zero3_param_persistence_threshold = 100'000;
  // DeepSpeed stage3_prefetch_bucket_size (default 5e7 elements) and stage3_max_live_parameters
  // (default 1e9): written to exports; the per-rank program prefetches whole units instead
  // (prefetch_units).
  int64_t zero3_prefetch_bucket_elements = 50'000'000;
  int64_t zero3_max_live_parameters = 1'000'000'000;

  // FSDP wrap units: consecutive parameters in forward order are grouped until a unit holds at
  // least this many elements, as torch.distributed.fsdp.wrap.size_based_auto_wrap_policy does
  // with its default min_num_params = 1e8; the last unit takes the remainder. ZeRO-3 gathers per
  // module instead: one unit per op that reads parameters.
  int64_t fsdp_min_unit_parameters = 100'000'000;
  // FSDP auto_wrap_policy: false is size_based_auto_wrap_policy (above); true is
  // transformer_auto_wrap_policy, what FSDP2 scripts do by calling fully_shard on every block:
  // one unit per repeated block (a module path ending in an index, "h.5", "encoder.layer.3"),
  // every other parameter (embeddings, final norm, head) in the root unit.
  bool fsdp_wrap_blocks = false;
  // Units all-gathered ahead of the one computing (FSDP backward_prefetch BACKWARD_PRE / FSDP2's
  // implicit prefetch, ZeRO-3's prefetch): 1 keeps two units' full parameters live at a time.
  int64_t prefetch_units = 1;
  // FSDP reshard_after_forward (FULL_SHARD: true; SHARD_GRAD_OP: false). ZeRO-3 always reshards.
  // False keeps every unit's full parameters from its forward to the end of its backward.
  bool reshard_after_forward = true;

  // The ranks one state is sharded over: N, or the GPUs of one node (N / nodes) for
  // hybrid-shard, whose nodes each hold a replica.
  bool operator==(const DataParallelOptions&) const = default;

  int64_t ShardRanks() const {
    return ShardsWithinNode(strategy) && nodes > 0 ? ranks / nodes : ranks;
  }
};

}  // namespace memplan
