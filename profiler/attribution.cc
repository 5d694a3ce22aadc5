#include "profiler/attribution.h"

#include <algorithm>
#include <map>
#include <optional>
#include <set>
#include <sstream>
#include <unordered_map>
#include <unordered_set>
#include <utility>

namespace memplan::profiler {
namespace {

constexpr double kSecondsPerNanosecond = 1e-9;

double DurationSeconds(uint64_t start_ns, uint64_t end_ns) {
  return end_ns > start_ns ? static_cast<double>(end_ns - start_ns) * kSecondsPerNanosecond : 0.0;
}

bool IsBackwardSide(StepPhase phase) {
  return phase == StepPhase::kBackward || phase == StepPhase::kRecompute;
}

// One device allocation, from its allocation record to its release (if the trace has one).
struct Block {
  uint64_t bytes = 0;
  std::optional<size_t> step;          // table index of the allocating execution
  std::optional<size_t> release_step;  // table index of the releasing execution
  bool released = false;
  bool by_allocator = false;
};

class Attributor {
 public:
  Attributor(const ActivityTrace& trace, const StepTable& steps, const AttributionOptions& options)
      : trace_(trace), steps_(steps), options_(options) {}

  Expected<AttributedProfile> Run() {
    MEMPLAN_RETURN_IF_ERROR(IndexSteps());
    IndexCorrelations();
    profile_.steps.resize(steps_.size());
    for (size_t i = 0; i < steps_.size(); ++i) profile_.steps[i].step = steps_[i];
    profile_.baseline_bytes = options_.baseline_device_bytes;
    profile_.device_peak_bytes = options_.baseline_device_bytes;
    profile_.dropped_records = trace_.dropped_records;
    AttributeDeviceActivity();
    MEMPLAN_RETURN_IF_ERROR(MatchAllocationsWithReleases());
    ReplayMemory();
    SummarizeNodes();
    return std::move(profile_);
  }

 private:
  Status IndexSteps() {
    for (size_t i = 0; i < steps_.size(); ++i) {
      auto [it, inserted] = step_of_external_id_.emplace(steps_[i].external_id, i);
      if (!inserted) {
        return MakeError("step table: external id " + std::to_string(steps_[i].external_id) +
                         " names both step '" + steps_[it->second].name + "' and step '" +
                         steps_[i].name + "'");
      }
    }
    return OkStatus();
  }

  void IndexCorrelations() {
    step_of_correlation_ = StepsByCorrelation(trace_, steps_);
    for (const ExternalCorrelationRecord& record : trace_.correlations) {
      if (record.domain == CorrelationDomain::kAllocator) {
        allocator_correlations_.insert(record.correlation_id);
      }
    }
  }

  std::optional<size_t> StepOfCorrelation(uint32_t correlation_id) const {
    auto it = step_of_correlation_.find(correlation_id);
    if (it == step_of_correlation_.end()) return std::nullopt;
    return it->second;
  }

  std::optional<size_t> StepOfMemoryRecord(const MemoryRecord& record) const {
    if (auto step = StepOfCorrelation(record.correlation_id)) return step;
    for (size_t i = 0; i < steps_.size(); ++i) {
      const ProfiledStep& step = steps_[i];
      if (step.host_end_ns > step.host_start_ns && record.timestamp_ns >= step.host_start_ns &&
          record.timestamp_ns < step.host_end_ns) {
        return i;
      }
    }
    return std::nullopt;
  }

  void AddDeviceActivity(const DeviceActivity& activity, bool is_kernel) {
    const double seconds = DurationSeconds(activity.start_ns, activity.end_ns);
    profile_.device_seconds += seconds;
    if (auto step = StepOfCorrelation(activity.correlation_id)) {
      profile_.steps[*step].device_seconds += seconds;
      if (is_kernel) ++profile_.steps[*step].kernels;
    } else {
      profile_.unattributed_seconds += seconds;
    }
  }

  void AttributeDeviceActivity() {
    for (const KernelRecord& k : trace_.kernels) AddDeviceActivity(k, /*is_kernel=*/true);
    for (const MemcpyRecord& m : trace_.memcpys) AddDeviceActivity(m, /*is_kernel=*/false);
    for (const MemsetRecord& m : trace_.memsets) AddDeviceActivity(m, /*is_kernel=*/false);
  }

  // Pass 1 over the time-ordered device memory records: pairs every allocation with its release,
  // so pass 2 knows at allocation time whether a block is scratch of its step.
  Status MatchAllocationsWithReleases() {
    for (size_t i = 0; i < trace_.memory.size(); ++i) {
      if (CountsAsDeviceMemory(trace_.memory[i].memory_kind)) order_.push_back(i);
    }
    std::stable_sort(order_.begin(), order_.end(), [&](size_t a, size_t b) {
      return trace_.memory[a].timestamp_ns < trace_.memory[b].timestamp_ns;
    });
    std::unordered_map<uint64_t, size_t> live;  // address -> block
    block_of_record_.assign(trace_.memory.size(), std::nullopt);
    for (size_t index : order_) {
      const MemoryRecord& record = trace_.memory[index];
      if (record.operation == MemoryRecord::Operation::kAllocation) {
        if (live.count(record.address) != 0) {
          std::ostringstream message;
          message << "activity trace: device address 0x" << std::hex << record.address
                  << " allocated twice without a release in between";
          return MakeError(message.str());
        }
        Block block;
        block.bytes = record.bytes;
        block.step = StepOfMemoryRecord(record);
        block.by_allocator = allocator_correlations_.count(record.correlation_id) != 0;
        live.emplace(record.address, blocks_.size());
        block_of_record_[index] = blocks_.size();
        blocks_.push_back(block);
      } else {
        auto it = live.find(record.address);
        if (it == live.end()) continue;  // allocated before the trace began
        Block& block = blocks_[it->second];
        block.released = true;
        block.release_step = StepOfMemoryRecord(record);
        block_of_record_[index] = it->second;
        live.erase(it);
      }
    }
    return OkStatus();
  }

  bool IsScratch(const Block& block) const {
    if (!block.step) return false;
    return !block.by_allocator || (block.released && block.release_step == block.step);
  }

  // The moment each micro-batch's backward begins, as far as host timestamps tell.
  std::map<int64_t, uint64_t> HostBackwardBoundaries() const {
    std::map<int64_t, uint64_t> boundary;
    for (const ProfiledStep& step : steps_) {
      if (!IsBackwardSide(step.phase) || step.host_start_ns == 0) continue;
      auto [it, inserted] = boundary.emplace(step.micro_batch, step.host_start_ns);
      if (!inserted) it->second = std::min(it->second, step.host_start_ns);
    }
    return boundary;
  }

  // Records, for micro-batch `micro_batch`, what its forward steps left live.
  void SnapshotActivations(int64_t micro_batch, const std::vector<size_t>& live_blocks) {
    if (!snapped_.insert(micro_batch).second) return;
    int64_t total = 0;
    std::map<std::string, int64_t> per_node;
    for (size_t b : live_blocks) {
      const Block& block = blocks_[b];
      // Library memory (a cuBLAS workspace created during the first GEMM) is not an activation.
      if (!block.step || !block.by_allocator) continue;
      const ProfiledStep& step = steps_[*block.step];
      if (step.phase != StepPhase::kForward || step.micro_batch != micro_batch) continue;
      total += static_cast<int64_t>(block.bytes);
      if (!step.node.empty()) per_node[step.node] += static_cast<int64_t>(block.bytes);
    }
    profile_.activation_bytes = std::max(profile_.activation_bytes, total);
    for (const auto& [node, bytes] : per_node) {
      int64_t& best = node_activation_bytes_[node];
      best = std::max(best, bytes);
    }
  }

  // Pass 2: live bytes over time (device peak and its split), scratch peaks per execution, and
  // the activation snapshots at each micro-batch's backward boundary.
  void ReplayMemory() {
    std::vector<int64_t> scratch_live(steps_.size(), 0);
    std::vector<size_t> live_blocks;  // kept in allocation order for deterministic snapshots
    std::set<int64_t> forward_micro_batches;
    for (const ProfiledStep& step : steps_) {
      if (step.phase == StepPhase::kForward) forward_micro_batches.insert(step.micro_batch);
    }
    const std::map<int64_t, uint64_t> host_boundaries = HostBackwardBoundaries();
    int64_t allocator_live = 0;
    int64_t library_live = 0;

    for (size_t index : order_) {
      const std::optional<size_t> b = block_of_record_[index];
      if (!b) continue;  // release of memory older than the trace
      const MemoryRecord& record = trace_.memory[index];
      const bool is_allocation = record.operation == MemoryRecord::Operation::kAllocation;
      Block& block = blocks_[*b];
      const std::optional<size_t> step = is_allocation ? block.step : block.release_step;

      for (const auto& [micro_batch, boundary_ns] : host_boundaries) {
        if (boundary_ns <= record.timestamp_ns) SnapshotActivations(micro_batch, live_blocks);
      }
      if (step && IsBackwardSide(steps_[*step].phase)) {
        SnapshotActivations(steps_[*step].micro_batch, live_blocks);
      }

      const int64_t bytes = static_cast<int64_t>(block.bytes);
      const int64_t sign = is_allocation ? 1 : -1;
      (block.by_allocator ? allocator_live : library_live) += sign * bytes;
      if (is_allocation) {
        live_blocks.push_back(*b);
      } else {
        live_blocks.erase(std::find(live_blocks.begin(), live_blocks.end(), *b));
      }
      if (step) {
        StepExecutionProfile& execution = profile_.steps[*step];
        (is_allocation ? execution.allocated_bytes : execution.freed_bytes) += bytes;
      }
      if (IsScratch(block)) {
        int64_t& live = scratch_live[*block.step];
        live += sign * bytes;
        StepExecutionProfile& owner = profile_.steps[*block.step];
        owner.workspace_bytes = std::max(owner.workspace_bytes, live);
      }
      profile_.allocator_peak_bytes = std::max(profile_.allocator_peak_bytes, allocator_live);
      const int64_t device_live = options_.baseline_device_bytes + allocator_live + library_live;
      if (device_live > profile_.device_peak_bytes) {
        profile_.device_peak_bytes = device_live;
        profile_.device_peak_ns = record.timestamp_ns;
        profile_.allocator_bytes_at_peak = allocator_live;
        profile_.library_bytes_at_peak = library_live;
      }
    }
    for (int64_t micro_batch : forward_micro_batches) SnapshotActivations(micro_batch, live_blocks);
  }

  void SummarizeNodes() {
    std::unordered_map<std::string, size_t> index_of_node;
    for (const StepExecutionProfile& execution : profile_.steps) {
      const ProfiledStep& step = execution.step;
      if (step.node.empty()) continue;
      auto [it, inserted] = index_of_node.emplace(step.node, profile_.nodes.size());
      if (inserted) {
        profile_.nodes.emplace_back();
        profile_.nodes.back().node = step.node;
      }
      NodeProfile& node = profile_.nodes[it->second];
      switch (step.phase) {
        case StepPhase::kForward:
          ++node.forward_runs;
          node.forward_seconds += execution.device_seconds;
          break;
        case StepPhase::kBackward:
          ++node.backward_runs;
          node.backward_seconds += execution.device_seconds;
          break;
        case StepPhase::kRecompute:
          ++node.recompute_runs;
          node.recompute_seconds += execution.device_seconds;
          break;
        default:
          break;
      }
      node.workspace_bytes = std::max(node.workspace_bytes, execution.workspace_bytes);
    }
    for (NodeProfile& node : profile_.nodes) {
      if (node.forward_runs > 0) node.forward_seconds /= static_cast<double>(node.forward_runs);
      if (node.backward_runs > 0) node.backward_seconds /= static_cast<double>(node.backward_runs);
      if (node.recompute_runs > 0) {
        node.recompute_seconds /= static_cast<double>(node.recompute_runs);
      }
      auto activation = node_activation_bytes_.find(node.node);
      if (activation != node_activation_bytes_.end()) node.activation_bytes = activation->second;
    }
  }

  const ActivityTrace& trace_;
  const StepTable& steps_;
  const AttributionOptions& options_;
  AttributedProfile profile_;

  std::unordered_map<uint64_t, size_t> step_of_external_id_;
  std::unordered_map<uint32_t, size_t> step_of_correlation_;
  std::unordered_set<uint32_t> allocator_correlations_;
  std::vector<size_t> order_;  // device memory records in replay order
  std::vector<Block> blocks_;
  std::vector<std::optional<size_t>> block_of_record_;
  std::set<int64_t> snapped_;
  std::map<std::string, int64_t> node_activation_bytes_;
};

}  // namespace

std::unordered_map<uint32_t, size_t> StepsByCorrelation(const ActivityTrace& trace,
                                                        const StepTable& steps) {
  std::unordered_map<uint64_t, size_t> step_of_external_id;
  for (size_t i = 0; i < steps.size(); ++i) step_of_external_id.emplace(steps[i].external_id, i);
  std::unordered_map<uint32_t, size_t> step_of_correlation;
  for (const ExternalCorrelationRecord& record : trace.correlations) {
    if (record.domain != CorrelationDomain::kStep) continue;
    auto step = step_of_external_id.find(record.external_id);
    if (step != step_of_external_id.end()) {
      step_of_correlation.emplace(record.correlation_id, step->second);
    }
  }
  return step_of_correlation;
}

Expected<AttributedProfile> Attribute(const ActivityTrace& trace, const StepTable& steps,
                                      const AttributionOptions& options) {
  return Attributor(trace, steps, options).Run();
}

}  // namespace memplan::profiler
