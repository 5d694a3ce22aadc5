#pragma once
// What a kCollective step of a per-rank program computes, on one rank of a simulated group
// (runtime/rank_group.h). The program states the operands (analyzer/derivation/rank_sharding.h);
// the arithmetic is the engines':
//
//  * all-gather: each whole output gets, from every member of the shard group, that member's part
//    (Buffer::shard_of_elements): read from the paired input shard, or, without one, from the
//    member's own copy of the output (ZeRO-1/2 gathering the parameters each rank updated).
//  * reduce-scatter: an input paired with a shard output (FSDP's reduce-scatter, ZeRO's reduce
//    of one large gradient) gives this rank the mean over its group of its part; ZeRO's reduce
//    bucket (one input, the outputs its members' shards, back to back in bucket order as the
//    kBucketCopy steps put them) gives each member's part the same way. A shard is written when
//    this step's Begin allocated it and added to otherwise (a gradient shard accumulating over
//    micro-batches). Any other input (ZeRO-1's gradients before the step) is averaged in place.
//  * bucket copy (kBucketCopy, not a collective: no other rank takes part): the gradient into the
//    bucket at the step's offset.
//  * all-reduce: every input is averaged in place over the group (DDP's buckets; hybrid-shard's
//    gradient shards among the nodes). A bucket output is the engine's staging memory and holds
//    no values of its own.
//
// Means, as DDP, FSDP and DeepSpeed average gradients over the data-parallel ranks, so the
// per-rank step equals one step of the whole global batch. The group of a collective is the
// step's CollectiveGroup: every rank, the ranks of this rank's node, or this rank's peers on the
// other nodes. The optimizer phase also asks the group for a global gradient norm and for an
// overflow anywhere (SumOverShardGroup, AnyRank), which the engines do with a small all-reduce.

#include <cstdint>
#include <map>
#include <vector>

#include "analyzer/program/training_program.h"
#include "graph/expected.h"
#include "runtime/backend.h"
#include "runtime/program_buffers.h"
#include "runtime/rank_group.h"

namespace memplan {

// The part of a tensor of `whole` elements that position `index` of a group of `shard_ranks`
// holds: [begin, begin + size); size is 0 for a position wholly in the padding.
struct ShardSlice {
  int64_t begin = 0;
  int64_t size = 0;
};
ShardSlice SliceOfShard(int64_t whole, int64_t shard_ranks, int64_t index);

// Rank `rank`'s position in its shard group (TrainingProgram::shard_ranks).
int64_t ShardPosition(const TrainingProgram& program, int64_t rank);

class CollectiveSteps {
 public:
  // REQUIRES: everything outlives this; 0 <= rank < group.ranks() == program.data_parallel_ranks.
  CollectiveSteps(const TrainingProgram& program, Backend& backend, const ProgramBuffers& buffers,
                  RankGroup& group, int64_t rank);

  int64_t rank() const { return rank_; }
  int64_t shard_position() const { return ShardPosition(p_, rank_); }

  // Runs one kCollective step. `fresh`: the buffers this step's Begin allocated. Errors: the
  // group stopped, an operand pairing the runtime does not execute (named).
  Status Run(const Step& step, const std::vector<BufferId>& fresh);

  // Runs one kBucketCopy step.
  Status CopyIntoBucket(const Step& step);

  // The sum of `value` over this rank's shard group (squared gradient norms of shards).
  Expected<double> SumOverShardGroup(double value);
  // Whether `value` holds on any rank (an overflow found in some rank's gradients).
  Expected<bool> AnyRank(bool value);

 private:
  // Ranks of this rank's group for `group`, in position order.
  std::vector<int64_t> Members(CollectiveGroup group) const;
  Status AllGather(const Step& step);
  Status Reduce(const Step& step, const std::vector<BufferId>& fresh);
  // Reduce in parts: where each input's reduced elements go, this rank's contribution (the
  // inputs, or the bucket's used part), and the shards written (or accumulated) from the mean.
  struct ScatterPiece;
  struct ReduceScatter;
  Expected<ReduceScatter> ScatterOf(const Step& step) const;
  Expected<RankGroup::Contribution> ReduceContribution(const Step& step,
                                                       const ReduceScatter& scatter);
  Status WriteShards(const std::vector<ScatterPiece>& pieces, const std::vector<double>& mean,
                     const std::vector<BufferId>& fresh);
  Expected<const RankGroup::Contributions*> Exchange(RankGroup::Contribution mine);

  const TrainingProgram& p_;
  Backend& backend_;
  const ProgramBuffers& buffers_;
  RankGroup& group_;
  const int64_t rank_;
  // Per reduce bucket (by buffer index): what the kBucketCopy steps put there (CopyIntoBucket).
  std::map<size_t, std::vector<float>> bucket_contents_;
};

}  // namespace memplan
