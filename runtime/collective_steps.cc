#include "runtime/collective_steps.h"

#include <algorithm>
#include <cstddef>
#include <string>

namespace memplan {

ShardSlice SliceOfShard(int64_t whole, int64_t shard_ranks, int64_t index) {
  const int64_t per_rank = (whole + shard_ranks - 1) / shard_ranks;
  ShardSlice slice;
  slice.begin = std::min(whole, index * per_rank);
  slice.size = std::min(per_rank, whole - slice.begin);
  return slice;
}

int64_t ShardPosition(const TrainingProgram& program, int64_t rank) {
  return rank % std::max<int64_t>(1, program.shard_ranks);
}

CollectiveSteps::CollectiveSteps(const TrainingProgram& program, Backend& backend,
                                 const ProgramBuffers& buffers, RankGroup& group, int64_t rank)
    : p_(program), backend_(backend), buffers_(buffers), group_(group), rank_(rank) {}

std::vector<int64_t> CollectiveSteps::Members(CollectiveGroup group) const {
  const int64_t per_node = std::max<int64_t>(1, p_.shard_ranks);
  std::vector<int64_t> members;
  for (int64_t q = 0; q < group_.ranks(); ++q) {
    const bool member =
        group == CollectiveGroup::kAllRanks ||
        (group == CollectiveGroup::kWithinNode && q / per_node == rank_ / per_node) ||
        (group == CollectiveGroup::kAcrossNodes && q % per_node == rank_ % per_node);
    if (member) members.push_back(q);
  }
  return members;
}

Expected<const RankGroup::Contributions*> CollectiveSteps::Exchange(RankGroup::Contribution mine) {
  return group_.Exchange(rank_, std::move(mine));
}

Status CollectiveSteps::Run(const Step& step, const std::vector<BufferId>& fresh) {
  switch (step.collective.kind) {
    case CollectiveKind::kAllGather:
      return AllGather(step);
    case CollectiveKind::kReduceScatter:
    case CollectiveKind::kAllReduce:
      return Reduce(step, fresh);
  }
  return OkStatus();
}

Status CollectiveSteps::AllGather(const Step& step) {
  // Shard-group members in position order: the all-gathers of sharded states run within it.
  const std::vector<int64_t> members =
      Members(p_.shard_ranks == p_.data_parallel_ranks ? CollectiveGroup::kAllRanks
                                                       : CollectiveGroup::kWithinNode);
  const int64_t position = shard_position();
  RankGroup::Contribution mine;
  for (size_t i = 0; i < step.outputs.size(); ++i) {
    const BufferId out = step.outputs[i];
    const int64_t whole = buffers_.Get(out).numel();
    if (p_.buffer(out).shard_of_elements != 0)
      return MakeError("collective '" + step.name + "' gathers into '" + p_.buffer(out).name +
                       "', a shard; the runtime gathers whole tensors only");
    const ShardSlice slice = SliceOfShard(whole, p_.shard_ranks, position);
    const bool from_shard = i < step.inputs.size();
    if (from_shard && p_.buffer(step.inputs[i]).shard_of_elements != whole)
      return MakeError("collective '" + step.name + "' gathers '" + p_.buffer(out).name +
                       "' from '" + p_.buffer(step.inputs[i]).name + "', which is not its shard");
    MEMPLAN_TRY(std::vector<float> source,
                backend_.Download(buffers_.Get(from_shard ? step.inputs[i] : out)));
    const int64_t offset = from_shard ? 0 : slice.begin;
    mine.emplace_back(source.begin() + offset, source.begin() + offset + slice.size);
  }
  MEMPLAN_TRY(const RankGroup::Contributions* all, Exchange(std::move(mine)));
  for (size_t i = 0; i < step.outputs.size(); ++i) {
    std::vector<float> whole;
    for (int64_t q : members) {
      const std::vector<float>& part = (*all)[static_cast<size_t>(q)][i];
      whole.insert(whole.end(), part.begin(), part.end());
    }
    MEMPLAN_RETURN_IF_ERROR(backend_.Upload(buffers_.Get(step.outputs[i]), whole));
  }
  return group_.Done(rank_);
}

// Where reduced elements go: pieces of an input, each a whole tensor at `offset` in the input
// whose shard this rank keeps in `shard`.
struct CollectiveSteps::ScatterPiece {
  BufferId shard;
  int64_t offset = 0;
};

// Per input of a reduce step: the shards it is scattered into (none: averaged in place), and
// whether the one input is ZeRO's reduce bucket rather than inputs paired with their shards.
struct CollectiveSteps::ReduceScatter {
  std::vector<std::vector<ScatterPiece>> pieces;
  bool bucket = false;
};

Expected<CollectiveSteps::ReduceScatter> CollectiveSteps::ScatterOf(const Step& step) const {
  ReduceScatter scatter;
  scatter.pieces.resize(step.inputs.size());
  for (size_t i = 0; i < step.outputs.size(); ++i) {
    const Buffer& out = p_.buffer(step.outputs[i]);
    if (out.shard_of_elements == 0) continue;  // a staging buffer, or in place below
    const bool in_place = i < step.inputs.size() && step.inputs[i] == step.outputs[i];
    const bool paired =
        i < step.inputs.size() && out.shard_of_elements == buffers_.Get(step.inputs[i]).numel();
    if (in_place) continue;
    if (paired) {
      scatter.pieces[i].push_back({step.outputs[i], 0});
    } else {
      scatter.bucket = true;
    }
  }
  if (!scatter.bucket) return scatter;
  // ZeRO's reduce bucket: one input holding the members back to back (kBucketCopy steps put
  // them there), the outputs their shards in that order.
  if (step.inputs.size() != 1)
    return MakeError("collective '" + step.name +
                     "' scatters into shards that match none of "
                     "its inputs; the runtime cannot tell where their elements are");
  scatter.pieces[0].clear();
  int64_t offset = 0;
  for (BufferId out : step.outputs) {
    const Buffer& b = p_.buffer(out);
    if (b.shard_of_elements == 0) continue;
    scatter.pieces[0].push_back({out, offset});
    offset += b.shard_of_elements;
  }
  if (offset > buffers_.Get(step.inputs[0]).numel())
    return MakeError("collective '" + step.name + "' scatters more elements than '" +
                     p_.buffer(step.inputs[0]).name + "' holds");
  return scatter;
}

Expected<RankGroup::Contribution> CollectiveSteps::ReduceContribution(
    const Step& step, const ReduceScatter& scatter) {
  RankGroup::Contribution mine;
  for (BufferId in : step.inputs) {
    if (scatter.bucket) {
      // The bucket: what the copies put there, up to the last member's end.
      std::vector<float> used = bucket_contents_[in.index()];
      const ScatterPiece& last = scatter.pieces[0].back();
      used.resize(static_cast<size_t>(last.offset + p_.buffer(last.shard).shard_of_elements), 0.0f);
      mine.push_back(std::move(used));
      continue;
    }
    MEMPLAN_TRY(std::vector<float> values, backend_.Download(buffers_.Get(in)));
    mine.push_back(std::move(values));
  }
  return mine;
}

Status CollectiveSteps::WriteShards(const std::vector<ScatterPiece>& pieces,
                                    const std::vector<double>& mean,
                                    const std::vector<BufferId>& fresh) {
  const int64_t position = shard_position();
  for (const ScatterPiece& piece : pieces) {
    const DeviceTensor& shard = buffers_.Get(piece.shard);
    const ShardSlice slice =
        SliceOfShard(p_.buffer(piece.shard).shard_of_elements, p_.shard_ranks, position);
    std::vector<float> part(static_cast<size_t>(shard.numel()), 0.0f);
    for (int64_t e = 0; e < slice.size; ++e)
      part[static_cast<size_t>(e)] =
          static_cast<float>(mean[static_cast<size_t>(piece.offset + slice.begin + e)]);
    // A shard this step's Begin allocated is written; one that lived on (a gradient shard of
    // an earlier micro-batch) accumulates.
    if (std::find(fresh.begin(), fresh.end(), piece.shard) == fresh.end()) {
      MEMPLAN_TRY(std::vector<float> before, backend_.Download(shard));
      for (size_t e = 0; e < part.size(); ++e) part[e] += before[e];
    }
    MEMPLAN_RETURN_IF_ERROR(backend_.Upload(shard, part));
  }
  return OkStatus();
}

Status CollectiveSteps::Reduce(const Step& step, const std::vector<BufferId>& fresh) {
  const std::vector<int64_t> members = Members(step.collective.group);
  const double share = 1.0 / static_cast<double>(members.size());
  MEMPLAN_TRY(const ReduceScatter scatter, ScatterOf(step));
  MEMPLAN_TRY(RankGroup::Contribution mine, ReduceContribution(step, scatter));
  MEMPLAN_TRY(const RankGroup::Contributions* all, Exchange(std::move(mine)));
  for (size_t i = 0; i < step.inputs.size(); ++i) {
    const std::vector<float>& own = (*all)[static_cast<size_t>(rank_)][i];
    std::vector<double> mean(own.size(), 0.0);
    for (int64_t q : members) {
      const std::vector<float>& theirs = (*all)[static_cast<size_t>(q)][i];
      for (size_t e = 0; e < mean.size(); ++e) mean[e] += theirs[e] * share;
    }
    if (scatter.pieces[i].empty()) {
      MEMPLAN_RETURN_IF_ERROR(backend_.Upload(buffers_.Get(step.inputs[i]),
                                              std::vector<float>(mean.begin(), mean.end())));
      continue;
    }
    MEMPLAN_RETURN_IF_ERROR(WriteShards(scatter.pieces[i], mean, fresh));
  }
  return group_.Done(rank_);
}

// The bucket's contents are kept beside its storage, only as far as the copies reach: the
// engines' default bucket holds 5e8 elements, and copying all of it per gradient would make a
// small model's verification take minutes. The storage is still allocated (and measured).
Status CollectiveSteps::CopyIntoBucket(const Step& step) {
  if (step.inputs.size() != 1 || step.outputs.size() != 1)
    return MakeError("bucket copy '" + step.name + "' needs one gradient and one bucket");
  MEMPLAN_TRY(std::vector<float> gradient, backend_.Download(buffers_.Get(step.inputs[0])));
  if (step.bucket_offset < 0 || step.bucket_offset + static_cast<int64_t>(gradient.size()) >
                                    buffers_.Get(step.outputs[0]).numel())
    return MakeError("bucket copy '" + step.name + "' does not fit its bucket");
  std::vector<float>& contents = bucket_contents_[step.outputs[0].index()];
  const auto offset = static_cast<size_t>(step.bucket_offset);
  if (contents.size() < offset + gradient.size()) contents.resize(offset + gradient.size(), 0.0f);
  std::copy(gradient.begin(), gradient.end(),
            contents.begin() + static_cast<std::ptrdiff_t>(offset));
  return OkStatus();
}

Expected<double> CollectiveSteps::SumOverShardGroup(double value) {
  MEMPLAN_TRY(const RankGroup::Contributions* all, Exchange({{static_cast<float>(value)}}));
  // float is enough: the caller sums squared norms to take one square root.
  double sum = 0.0;
  const int64_t per_node = std::max<int64_t>(1, p_.shard_ranks);
  for (int64_t q = 0; q < group_.ranks(); ++q)
    if (q / per_node == rank_ / per_node) sum += (*all)[static_cast<size_t>(q)][0][0];
  MEMPLAN_RETURN_IF_ERROR(group_.Done(rank_));
  return sum;
}

Expected<bool> CollectiveSteps::AnyRank(bool value) {
  MEMPLAN_TRY(const RankGroup::Contributions* all, Exchange({{value ? 1.0f : 0.0f}}));
  bool any = false;
  for (const RankGroup::Contribution& c : *all) any = any || c[0][0] != 0.0f;
  MEMPLAN_RETURN_IF_ERROR(group_.Done(rank_));
  return any;
}

}  // namespace memplan
