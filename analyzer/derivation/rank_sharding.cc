#include "analyzer/derivation/rank_sharding.h"

#include <algorithm>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "analyzer/derivation/program_rewrite.h"

// The rewrite collects new steps to insert before or after original steps and new events on
// original steps, then lays the steps out again and re-derives the phase ranges, so every
// original step keeps its events and order (see rank_sharding.h for the memory model; the
// bookkeeping is analyzer/derivation/program_rewrite.h, shared with the offload pass).

namespace memplan {
namespace {

using Action = MemoryEvent::Action;

int64_t CeilDiv(int64_t a, int64_t b) { return (a + b - 1) / b; }

// A group of parameters gathered together (an FSDP unit, a ZeRO-3 module).
struct Unit {
  std::vector<int> parameters;   // indices into TrainingProgram::parameters
  ParameterUnit span;            // the full buffers the compute steps read, and when
  std::vector<BufferId> shards;  // their persistent shards (the all-gather's inputs)
  int64_t elements = 0;
  LogicalTime last_accumulation = -1;
};

class RankSharder {
 public:
  RankSharder(TrainingProgram program, const DataParallelOptions& options,
              const std::vector<int>& block_of_node)
      : p_(std::move(program)), o_(options), block_of_node_(block_of_node), insert_(p_) {}

  Expected<TrainingProgram> Run() {
    MEMPLAN_RETURN_IF_ERROR(Validate());
    body_ = RecordBodyUses(p_);
    p_.data_parallel_ranks = o_.ranks;
    p_.data_parallel_strategy = std::string(ParallelStrategyName(o_.strategy));
    p_.shard_ranks = o_.ShardRanks();
    const ParallelStrategy s = o_.strategy;
    if (s == ParallelStrategy::kDdp) AddDdpBuckets();
    if (ShardsOptimizerState(s)) ShardOptimizerState();
    if (ShardsParameters(s)) ShardParameters();
    if (ShardsGradients(s)) {
      if (IsFsdp(s)) {
        ReduceScatterPerUnit();
      } else {
        ReduceThroughBucket();
      }
    }
    if (s == ParallelStrategy::kZero1) ReduceAtOptimizerPhase();
    // Every rank updates only its shard of the optimizer state, so parameters kept whole (all of
    // them in ZeRO-1/2, the persistent small ones in ZeRO-3) are all-gathered after the step.
    if (s == ParallelStrategy::kZero1 || s == ParallelStrategy::kZero2 ||
        s == ParallelStrategy::kZero3)
      GatherUpdatedParameters();
    insert_.Apply(p_);
    return std::move(p_);
  }

 private:
  Status Validate() const {
    if (p_.data_parallel_ranks != 1) return MakeError("the program is already a per-rank program");
    if (o_.ranks < 1) return MakeError("data-parallel ranks must be >= 1");
    if (o_.nodes < 1 || o_.nodes > o_.ranks || o_.ranks % o_.nodes != 0) {
      return MakeError("nodes must be >= 1 and divide the ranks evenly (got " +
                       std::to_string(o_.ranks) + " ranks on " + std::to_string(o_.nodes) +
                       " nodes)");
    }
    if (o_.ddp_bucket_cap_bytes < 1 || o_.ddp_first_bucket_bytes < 1 ||
        o_.zero_reduce_bucket_elements < 1 || o_.fsdp_min_unit_parameters < 0 ||
        o_.prefetch_units < 0 || o_.zero3_param_persistence_threshold < 0)
      return MakeError("bucket sizes must be >= 1 and unit sizes, prefetch >= 0");
    // torch DDP refuses a module without a parameter that requires a gradient, and there is
    // nothing for ZeRO or FSDP to shard or reduce either.
    const bool trains = std::any_of(p_.parameters.begin(), p_.parameters.end(),
                                    [](const ParameterBuffers& pb) { return pb.gradient.valid(); });
    if (!trains) {
      return MakeError("--parallel " + std::string(ParallelStrategyName(o_.strategy)) +
                       ": the model has no trainable parameters, so there is nothing to "
                       "synchronise or shard across GPUs");
    }
    for (const ParameterBuffers& pb : p_.parameters) {
      const Buffer& b = p_.buffer(pb.master);
      if (!b.bytes.constant_value() || !b.shape.NumElements().constant_value())
        return MakeError("parameter '" + b.name + "' has a symbolic size; it cannot be sharded");
    }
    return OkStatus();
  }

  int64_t Bytes(BufferId b) const { return *p_.buffer(b).bytes.constant_value(); }
  int64_t Elements(BufferId b) const { return *p_.buffer(b).shape.NumElements().constant_value(); }

  // Turns `b` into its shard in place: ceil(elements / N) elements of the same dtype.
  // Idempotent: a buffer is sharded at most once (optimizer state and parameter passes meet at the
  // mixed-precision masters).
  void ShardInPlace(BufferId id) {
    if (!id.valid()) return;
    if (sharded_.size() < p_.buffers.size()) sharded_.resize(p_.buffers.size(), false);
    if (sharded_[id.index()]) return;
    sharded_[id.index()] = true;
    Buffer& b = p_.buffers[id.index()];
    const int64_t elements = *b.shape.NumElements().constant_value();
    const int64_t bytes = *b.bytes.constant_value();
    // hybrid-shard shards within a node only (DataParallelOptions::ShardRanks).
    const int64_t ranks = o_.ShardRanks();
    const int64_t shard_elements = CeilDiv(elements, ranks);
    // Packed dtypes (4-bit) have no whole bytes per element: shard the bytes instead.
    const int64_t shard_bytes = elements > 0 && bytes % elements == 0
                                    ? shard_elements * (bytes / elements)
                                    : CeilDiv(bytes, ranks);
    b.shape = Shape{{Dim(shard_elements)}};
    b.bytes = Dim(shard_bytes);
    b.shard_of_elements = elements;
  }

  // A new persistent buffer holding this rank's shard of `full`.
  BufferId NewShard(BufferId full) {
    Buffer shard = p_.buffer(full);
    shard.id = BufferId(static_cast<int>(p_.buffers.size()));
    shard.name += ".shard";
    shard.persistent = true;
    shard.held_for_backward = false;
    p_.buffers.push_back(std::move(shard));
    ShardInPlace(p_.buffers.back().id);
    return p_.buffers.back().id;
  }

  BufferId NewBuffer(std::string name, MemoryCategory category, BufferRole role, DType dtype,
                     int64_t bytes, bool persistent) {
    Buffer b;
    b.id = BufferId(static_cast<int>(p_.buffers.size()));
    b.name = std::move(name);
    b.role = role;
    b.category = category;
    b.dtype = dtype;
    b.persistent = persistent;
    const int64_t element = std::max<int64_t>(1, ByteSize(dtype));
    b.shape = Shape{{Dim(CeilDiv(bytes, element))}};
    b.bytes = Dim(bytes);
    p_.buffers.push_back(std::move(b));
    return p_.buffers.back().id;
  }

  // hybrid-shard's all-gathers and reduce-scatters stay within the node; every other
  // strategy's collectives span all ranks.
  Step Collective(CollectiveKind kind, std::string name, int64_t payload, bool overlaps) const {
    Step s;
    s.kind = StepKind::kCollective;
    s.name = std::move(name);
    s.collective = memplan::Collective{
        kind, payload, overlaps,
        ShardsWithinNode(o_.strategy) ? CollectiveGroup::kWithinNode : CollectiveGroup::kAllRanks};
    return s;
  }

  // Setup allocates persistent buffers of the whole rank (buckets, the reduce bucket).
  void AllocateAtSetup(BufferId b) {
    MEMPLAN_CHECK(p_.setup.size() > 0) << "a program without a setup step";
    p_.steps[static_cast<size_t>(p_.setup.begin)].begin.push_back(AllocEvent(b));
  }

  // Parameters with a gradient in the order their last accumulation runs (gradient-ready order).
  std::vector<int> ParametersByGradientReady() const {
    std::vector<int> order;
    for (size_t i = 0; i < p_.parameters.size(); ++i)
      if (p_.parameters[i].gradient.valid() && body_.last_accumulation[i] >= 0)
        order.push_back(static_cast<int>(i));
    std::stable_sort(order.begin(), order.end(), [&](int a, int b) {
      return body_.last_accumulation[static_cast<size_t>(a)] <
             body_.last_accumulation[static_cast<size_t>(b)];
    });
    return order;
  }

  // ---- DDP ---------------------------------------------------------------------------------

  void AddDdpBuckets() {
    const std::vector<int> order = ParametersByGradientReady();
    size_t next = 0;
    int bucket_index = 0;
    while (next < order.size()) {
      const int64_t cap = bucket_index == 0 ? o_.ddp_first_bucket_bytes : o_.ddp_bucket_cap_bytes;
      std::vector<int> members;
      int64_t bytes = 0;
      while (next < order.size() && bytes < cap) {
        members.push_back(order[next]);
        bytes += Bytes(p_.parameters[static_cast<size_t>(order[next])].gradient);
        ++next;
      }
      Step reduce = Collective(CollectiveKind::kAllReduce,
                               "all_reduce ddp_bucket[" + std::to_string(bucket_index) + "]", bytes,
                               /*overlaps=*/true);
      LogicalTime last = -1;
      for (int i : members) {
        reduce.inputs.push_back(p_.parameters[static_cast<size_t>(i)].gradient);
        last = std::max(last, body_.last_accumulation[static_cast<size_t>(i)]);
      }
      if (o_.ddp_gradient_as_bucket_view) {
        reduce.outputs = reduce.inputs;  // in place: the gradients are the bucket
      } else {
        const BufferId first_grad = p_.parameters[static_cast<size_t>(members[0])].gradient;
        const BufferId bucket = NewBuffer("ddp_bucket[" + std::to_string(bucket_index) + "]",
                                          MemoryCategory::kGradients, BufferRole::kWorkspace,
                                          p_.buffer(first_grad).dtype, bytes, true);
        AllocateAtSetup(bucket);
        reduce.outputs = {bucket};
      }
      insert_.After(last).push_back(std::move(reduce));
      ++bucket_index;
    }
    // gradient_as_bucket_view: the gradients are views of buckets the Reducer allocates at
    // construction, so they hold memory from setup on and zero_grad(set_to_none) frees nothing.
    if (o_.ddp_gradient_as_bucket_view) {
      std::vector<bool> is_view(p_.buffers.size(), false);
      for (int i : order) {
        const BufferId g = p_.parameters[static_cast<size_t>(i)].gradient;
        is_view[g.index()] = true;
        p_.buffers[g.index()].persistent = true;
        AllocateAtSetup(g);
      }
      for (LogicalTime t = p_.optimizer.begin; t < p_.optimizer.end; ++t) {
        auto& end = p_.steps[static_cast<size_t>(t)].end;
        end.erase(std::remove_if(end.begin(), end.end(),
                                 [&](const MemoryEvent& e) {
                                   return e.action == Action::kFree && is_view[e.buffer.index()];
                                 }),
                  end.end());
      }
    }
  }

  // ---- optimizer state -----------------------------------------------------------------------

  // Moments, master-gradient copies and, in mixed precision, the fp32 masters no compute step
  // reads (an op that reads the master itself needs it whole). The optimizer step's
  // intermediates (analyzer/program/optimizer_transient.h) follow the state they copy: a rank steps
  // only its shard. A for-loop's one-at-a-time peak is divided as a whole, which is its
  // per-parameter formula over the shards up to the padding of ceil(elements / N).
  void ShardOptimizerState() {
    for (ParameterBuffers& pb : p_.parameters) {
      for (BufferId s : pb.optimizer_states) ShardInPlace(s);
      ShardInPlace(pb.master_gradient);
      if (pb.working.valid() && body_.steps[pb.master.index()].empty()) ShardInPlace(pb.master);
    }
    for (size_t i = 0; i < p_.buffers.size(); ++i)
      if (p_.buffers[i].role == BufferRole::kOptimizerTransient)
        ShardInPlace(BufferId(static_cast<int>(i)));
  }

  void ReduceAtOptimizerPhase() {
    int64_t bytes = 0;
    Step reduce = Collective(CollectiveKind::kReduceScatter, "reduce_scatter gradients", 0, false);
    for (const ParameterBuffers& pb : p_.parameters) {
      if (!pb.gradient.valid()) continue;
      bytes += Bytes(pb.gradient);
      reduce.inputs.push_back(pb.gradient);
    }
    reduce.collective.payload_bytes = bytes;
    insert_.Before(p_.optimizer.begin).push_back(std::move(reduce));
  }

  void GatherUpdatedParameters() {
    int64_t bytes = 0;
    Step gather = Collective(CollectiveKind::kAllGather, "all_gather updated parameters", 0, false);
    for (size_t i = 0; i < p_.parameters.size(); ++i) {
      const ParameterBuffers& pb = p_.parameters[i];
      if (!pb.gradient.valid() || (i < in_unit_.size() && in_unit_[i])) continue;
      const BufferId compute = pb.working.valid() ? pb.working : pb.master;
      bytes += Bytes(compute);
      gather.outputs.push_back(compute);
    }
    gather.collective.payload_bytes = bytes;
    if (gather.outputs.empty()) return;
    for (LogicalTime t = p_.optimizer.begin; t < p_.optimizer.end; ++t) {
      if (p_.step(t).kind == StepKind::kOptimizerStep) {
        insert_.After(t).push_back(std::move(gather));
        return;
      }
    }
  }

  // ---- parameters (zero3, fsdp) ----------------------------------------------------------------

  void ShardParameters() {
    const bool zero3 = o_.strategy == ParallelStrategy::kZero3;
    struct Candidate {
      int parameter;
      LogicalTime first_use;
    };
    std::vector<Candidate> candidates;
    for (size_t i = 0; i < p_.parameters.size(); ++i) {
      ParameterBuffers& pb = p_.parameters[i];
      const bool persistent_whole =
          zero3 && Elements(pb.master) <= o_.zero3_param_persistence_threshold;
      LogicalTime first = -1;
      for (BufferId b : {pb.master, pb.working}) {
        if (!b.valid() || body_.steps[b.index()].empty()) continue;
        first = first < 0 ? body_.steps[b.index()].front()
                          : std::min(first, body_.steps[b.index()].front());
      }
      if (persistent_whole) continue;
      if (first < 0) {
        // Read by no compute step: stored as a shard, never gathered.
        ShardInPlace(pb.working);
        if (!pb.working.valid()) ShardInPlace(pb.master);
        continue;
      }
      candidates.push_back({static_cast<int>(i), first});
    }
    in_unit_.assign(p_.parameters.size(), false);
    std::stable_sort(
        candidates.begin(), candidates.end(),
        [](const Candidate& a, const Candidate& b) { return a.first_use < b.first_use; });
    // Group into units.
    const bool by_block = !zero3 && o_.fsdp_wrap_blocks;
    std::map<int, size_t> unit_of_block;  // FSDP transformer wrap: block (-1: root) -> unit
    for (const Candidate& c : candidates) {
      const int64_t elements = Elements(p_.parameters[static_cast<size_t>(c.parameter)].master);
      size_t unit = units_.size();
      if (by_block) {
        const int block = BlockOf(c.first_use);
        auto [it, added] = unit_of_block.emplace(block, units_.size());
        unit = it->second;
        (void)added;
      } else if (!units_.empty()) {
        const bool join = zero3 ? unit_first_use_.back() == c.first_use
                                : units_.back().elements < o_.fsdp_min_unit_parameters;
        if (join) unit = units_.size() - 1;
      }
      if (unit == units_.size()) {
        units_.emplace_back();
        unit_first_use_.push_back(c.first_use);
      }
      units_[unit].parameters.push_back(c.parameter);
      in_unit_[static_cast<size_t>(c.parameter)] = true;
      units_[unit].elements += elements;
    }
    for (size_t u = 0; u < units_.size(); ++u) BuildUnit(units_[u]);
    // The transformer wrap's root unit (the parameters outside every block) is FSDP2's root.
    if (auto root = unit_of_block.find(-1); root != unit_of_block.end())
      units_[root->second].span.keep_gathered = true;
    PlaceGathers();
  }

  // The repeated block the node of step `t` belongs to; -1 outside every block (the root).
  int BlockOf(LogicalTime t) const {
    const NodeId node = p_.step(t).node;
    if (!node.valid() || node.index() >= block_of_node_.size()) return -1;
    return block_of_node_[node.index()];
  }

  // The unit's gathered buffers, shards (replacing them at setup) and time spans.
  void BuildUnit(Unit& unit) {
    std::map<BufferId, BufferId> shard_of;
    for (int i : unit.parameters) {
      ParameterBuffers& pb = p_.parameters[static_cast<size_t>(i)];
      for (BufferId* slot : {&pb.master, &pb.working}) {
        if (!slot->valid()) continue;
        if (body_.steps[slot->index()].empty()) {
          ShardInPlace(*slot);  // a mixed-precision master no op reads: optimizer state only
          continue;
        }
        const BufferId full = *slot;
        const BufferId shard = NewShard(full);
        p_.buffers[full.index()].persistent = false;
        unit.span.buffers.push_back(full);
        unit.shards.push_back(shard);
        shard_of[full] = shard;
        *slot = shard;
      }
      unit.last_accumulation =
          std::max(unit.last_accumulation, body_.last_accumulation[static_cast<size_t>(i)]);
    }
    // Setup allocates the shards in place of the full buffers.
    for (LogicalTime t = p_.setup.begin; t < p_.setup.end; ++t)
      for (MemoryEvent& e : p_.steps[static_cast<size_t>(t)].begin)
        if (auto it = shard_of.find(e.buffer); it != shard_of.end()) e.buffer = it->second;
    ComputeUnitSpan(p_, body_, unit.span);
  }

  Step GatherStep(const Unit& unit, size_t index, const char* when) const {
    int64_t bytes = 0;
    for (BufferId b : unit.span.buffers) bytes += Bytes(b);
    Step s = Collective(CollectiveKind::kAllGather,
                        "all_gather unit" + std::to_string(index) + " " + when, bytes, false);
    s.inputs = unit.shards;
    s.outputs = unit.span.buffers;
    for (BufferId b : unit.span.buffers) s.begin.push_back(AllocEvent(b));
    return s;
  }

  // Each unit is gathered prefetch_units units ahead of the one computing (forward in forward
  // order, backward in backward order) and freed after its last use in the phase.
  void PlaceGathers() {
    const bool reshard = o_.reshard_after_forward || o_.strategy == ParallelStrategy::kZero3;
    std::vector<ParameterUnit> spans;
    for (const Unit& unit : units_) spans.push_back(unit.span);
    PlaceUnitFetches(
        p_, spans, o_.prefetch_units, reshard,
        [&](size_t u, bool backward) {
          return GatherStep(units_[u], u, backward ? "(backward)" : "(forward)");
        },
        insert_);
  }

  // ---- gradients (zero2, zero3, fsdp) --------------------------------------------------------

  // The persistent shard becomes the parameter's gradient; the full one lives within a
  // micro-batch. kZeroGradients frees the shard.
  BufferId ShardGradient(int i) {
    ParameterBuffers& pb = p_.parameters[static_cast<size_t>(i)];
    const BufferId full = pb.gradient;
    const BufferId shard = NewShard(full);
    p_.buffers[full.index()].persistent = false;
    pb.gradient = shard;
    for (LogicalTime t = p_.optimizer.begin; t < p_.optimizer.end; ++t)
      for (MemoryEvent& e : p_.steps[static_cast<size_t>(t)].end)
        if (e.buffer == full) e.buffer = shard;
    return full;
  }

  // FSDP: one reduce-scatter per unit after its last accumulation (FSDP2 foreach_reduce copies
  // the unit's gradients into a reduce-scatter input, drops them, reduce-scatters into shards).
  // hybrid-shard on several nodes then all-reduces the unit's gradient shards among the node
  // replicas, in place (FSDP2 foreach_reduce's all_reduce over the mesh's replicate dimension).
  void ReduceScatterPerUnit() {
    std::vector<std::vector<int>> groups;
    std::vector<bool> grouped(p_.parameters.size(), false);
    for (const Unit& unit : units_) {
      groups.emplace_back();
      for (int i : unit.parameters) {
        grouped[static_cast<size_t>(i)] = true;
        groups.back().push_back(i);
      }
    }
    for (size_t i = 0; i < p_.parameters.size(); ++i)
      if (!grouped[i]) groups.push_back({static_cast<int>(i)});
    for (size_t g = 0; g < groups.size(); ++g) {
      std::vector<BufferId> full;
      std::vector<BufferId> shards;
      LogicalTime last = -1;
      int64_t bytes = 0;
      for (int i : groups[g]) {
        if (!p_.parameters[static_cast<size_t>(i)].gradient.valid() ||
            body_.last_accumulation[static_cast<size_t>(i)] < 0)
          continue;
        full.push_back(ShardGradient(i));
        shards.push_back(p_.parameters[static_cast<size_t>(i)].gradient);
        bytes += Bytes(full.back());
        last = std::max(last, body_.last_accumulation[static_cast<size_t>(i)]);
      }
      if (full.empty()) continue;
      const BufferId input = NewBuffer("reduce_scatter_input(unit" + std::to_string(g) + ")",
                                       MemoryCategory::kGradients, BufferRole::kValueGradient,
                                       p_.buffer(full[0]).dtype, bytes, false);
      Step s = Collective(CollectiveKind::kReduceScatter, "reduce_scatter unit" + std::to_string(g),
                          bytes, true);
      s.inputs = full;
      s.outputs = shards;
      s.outputs.push_back(input);
      s.begin.push_back(AllocEvent(input));
      for (BufferId b : shards) s.begin.push_back(AllocIfNotLiveEvent(b));
      for (BufferId b : full) s.end.push_back(FreeEvent(b));
      s.end.push_back(FreeEvent(input));
      insert_.After(last).push_back(std::move(s));
      if (ShardsWithinNode(o_.strategy) && o_.nodes > 1) {
        int64_t shard_bytes = 0;
        for (BufferId b : shards) shard_bytes += Bytes(b);
        Step across = Collective(CollectiveKind::kAllReduce,
                                 "all_reduce unit" + std::to_string(g) + " across nodes",
                                 shard_bytes, /*overlaps=*/true);
        across.collective.group = CollectiveGroup::kAcrossNodes;
        across.inputs = shards;
        across.outputs = shards;
        insert_.After(last).push_back(std::move(across));
      }
    }
  }

  // DeepSpeed ZeRO-2/3 (contiguous_gradients): a gradient is copied into the persistent reduce
  // bucket and freed at the end of its last accumulation; when the next one would overflow the
  // bucket, the bucket is reduced into the owners' shards. A gradient larger than the bucket is
  // reduced on its own, straight from its storage.
  void ReduceThroughBucket() {
    const std::vector<int> order = ParametersByGradientReady();
    if (order.empty()) return;
    const DType dtype = p_.buffer(p_.parameters[static_cast<size_t>(order[0])].gradient).dtype;
    const BufferId bucket =
        NewBuffer("zero_reduce_bucket", MemoryCategory::kGradients, BufferRole::kWorkspace, dtype,
                  o_.zero_reduce_bucket_elements * ByteSize(dtype), true);
    AllocateAtSetup(bucket);
    std::vector<std::pair<int, int64_t>> members;  // parameter, full gradient bytes
    int64_t elements = 0;
    auto flush = [&]() {
      if (members.empty()) return;
      int64_t bytes = 0;
      LogicalTime last = -1;
      Step s = Collective(CollectiveKind::kReduceScatter,
                          "reduce bucket" + std::to_string(reduce_index_++), 0, true);
      s.inputs = {bucket};
      for (const auto& [i, full_bytes] : members) {
        const BufferId shard = p_.parameters[static_cast<size_t>(i)].gradient;
        bytes += full_bytes;
        s.begin.push_back(AllocIfNotLiveEvent(shard));
        s.outputs.push_back(shard);
        last = std::max(last, body_.last_accumulation[static_cast<size_t>(i)]);
      }
      s.collective.payload_bytes = bytes;
      insert_.After(last).push_back(std::move(s));
      members.clear();
      elements = 0;
    };
    for (int i : order) {
      const BufferId full = ShardGradient(i);
      const int64_t n = Elements(full);
      const LogicalTime last = body_.last_accumulation[static_cast<size_t>(i)];
      if (n > o_.zero_reduce_bucket_elements) {
        flush();
        Step s = Collective(CollectiveKind::kReduceScatter, "reduce " + p_.buffer(full).name,
                            Bytes(full), true);
        const BufferId shard = p_.parameters[static_cast<size_t>(i)].gradient;
        s.inputs = {full};
        s.outputs = {shard};
        s.begin.push_back(AllocIfNotLiveEvent(shard));
        s.end.push_back(FreeEvent(full));
        insert_.After(last).push_back(std::move(s));
        continue;
      }
      if (elements + n > o_.zero_reduce_bucket_elements) flush();
      Step copy;
      copy.kind = StepKind::kBucketCopy;
      copy.name = "copy " + p_.buffer(full).name + " into zero_reduce_bucket";
      copy.inputs = {full};
      copy.outputs = {bucket};
      copy.bucket_offset = elements;
      copy.end.push_back(FreeEvent(full));
      insert_.After(last).push_back(std::move(copy));
      members.emplace_back(i, Bytes(full));
      elements += n;
    }
    flush();
  }

  TrainingProgram p_;
  const DataParallelOptions& o_;
  const std::vector<int>& block_of_node_;  // by NodeId: the repeated block, -1 for none
  StepInsertions insert_;                  // new steps around each original step
  BodyUses body_;  // per buffer: body steps naming it; per parameter: its last accumulation
  std::vector<Unit> units_;
  std::vector<LogicalTime> unit_first_use_;
  int reduce_index_ = 0;
  std::vector<bool> sharded_;  // per buffer: ShardInPlace already applied
  std::vector<bool> in_unit_;  // per parameter: sharded and gathered (zero3, fsdp)
};

}  // namespace

Expected<TrainingProgram> DerivePerRankProgram(TrainingProgram single,
                                               const DataParallelOptions& options,
                                               const std::vector<int>& block_of_node) {
  if (options.fsdp_wrap_blocks && IsFsdp(options.strategy) &&
      std::none_of(block_of_node.begin(), block_of_node.end(), [](int b) { return b >= 0; }))
    return MakeError(
        "FSDP auto_wrap_policy=transformer: no node name of the model names a "
        "repeated block (a module path ending in an index, such as \"h.5\"), so "
        "there is no block to wrap; use auto_wrap_policy=size");
  RankSharder sharder(std::move(single), options, block_of_node);
  return sharder.Run();
}

}  // namespace memplan
