#include "runtime/collective_steps.h"

#include <algorithm>
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

Status CollectiveSteps::Reduce(const Step& step, const std::vector<BufferId>& fresh) {
  const std::vector<int64_t> members = Members(step.collective.group);
  const double share = 1.0 / static_cast<double>(members.size());
  // An input is scattered into the output in the same slot when that output is its shard.
  std::vector<BufferId> scatter_to(step.inputs.size());
  for (size_t i = 0; i < step.inputs.size() && i < step.outputs.size(); ++i) {
    const Buffer& out = p_.buffer(step.outputs[i]);
    if (step.outputs[i] != step.inputs[i] && out.shard_of_elements != 0 &&
        out.shard_of_elements == buffers_.Get(step.inputs[i]).numel())
      scatter_to[i] = step.outputs[i];
  }
  for (size_t i = 0; i < step.outputs.size(); ++i) {
    const Buffer& out = p_.buffer(step.outputs[i]);
    const bool paired = i < step.inputs.size() &&
                        (scatter_to[i] == step.outputs[i] || step.inputs[i] == step.outputs[i]);
    if (out.shard_of_elements != 0 && !paired) {
      // ZeRO-2/3's reduce bucket: the gradients copied into it are not steps of the program.
      return MakeError("collective '" + step.name + "' reduces into the shard '" + out.name +
                       "' from a bucket whose contents the program does not state; the runtime "
                       "does not execute DeepSpeed's contiguous reduce bucket (zero2, zero3)");
    }
  }
  RankGroup::Contribution mine;
  for (BufferId in : step.inputs) {
    MEMPLAN_TRY(std::vector<float> values, backend_.Download(buffers_.Get(in)));
    mine.push_back(std::move(values));
  }
  MEMPLAN_TRY(const RankGroup::Contributions* all, Exchange(std::move(mine)));
  const int64_t position = shard_position();
  for (size_t i = 0; i < step.inputs.size(); ++i) {
    const std::vector<float>& own = (*all)[static_cast<size_t>(rank_)][i];
    std::vector<double> mean(own.size(), 0.0);
    for (int64_t q : members) {
      const std::vector<float>& theirs = (*all)[static_cast<size_t>(q)][i];
      for (size_t e = 0; e < mean.size(); ++e) mean[e] += theirs[e];
    }
    if (!scatter_to[i].valid()) {
      std::vector<float> result(mean.size());
      for (size_t e = 0; e < mean.size(); ++e) result[e] = static_cast<float>(mean[e] * share);
      MEMPLAN_RETURN_IF_ERROR(backend_.Upload(buffers_.Get(step.inputs[i]), result));
      continue;
    }
    const DeviceTensor& shard = buffers_.Get(scatter_to[i]);
    const ShardSlice slice =
        SliceOfShard(static_cast<int64_t>(mean.size()), p_.shard_ranks, position);
    std::vector<float> part(static_cast<size_t>(shard.numel()), 0.0f);
    for (int64_t e = 0; e < slice.size; ++e)
      part[static_cast<size_t>(e)] =
          static_cast<float>(mean[static_cast<size_t>(slice.begin + e)] * share);
    const bool written_here = std::find(fresh.begin(), fresh.end(), scatter_to[i]) != fresh.end();
    if (!written_here) {
      MEMPLAN_TRY(std::vector<float> before, backend_.Download(shard));
      for (size_t e = 0; e < part.size(); ++e) part[e] += before[e];
    }
    MEMPLAN_RETURN_IF_ERROR(backend_.Upload(shard, part));
  }
  return group_.Done(rank_);
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
