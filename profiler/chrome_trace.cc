#include "profiler/chrome_trace.h"

#include <algorithm>
#include <limits>
#include <map>
#include <optional>
#include <set>
#include <unordered_map>
#include <vector>

#include <nlohmann/json.hpp>

#include "analyzer/text/markup.h"

namespace memplan::profiler {
namespace {

using nlohmann::json;

constexpr int kProgramPid = 0;
constexpr int kStepsTid = 0;

int GpuPid(uint32_t device_id) { return static_cast<int>(device_id) + 1; }

// Extent of a step execution's device activity, accumulated while its records are visited.
struct Extent {
  uint64_t start_ns = std::numeric_limits<uint64_t>::max();
  uint64_t end_ns = 0;
  bool empty() const { return end_ns == 0 && start_ns == std::numeric_limits<uint64_t>::max(); }
  void Add(uint64_t start, uint64_t end) {
    start_ns = std::min(start_ns, start);
    end_ns = std::max(end_ns, end);
  }
};

class TraceBuilder {
 public:
  TraceBuilder(const ActivityTrace& trace, const StepTable& steps, const AttributedProfile& profile)
      : trace_(trace),
        steps_(steps),
        profile_(profile),
        step_of_correlation_(StepsByCorrelation(trace, steps)),
        origin_ns_(EarliestTimestamp()) {}

  json Build() {
    std::vector<json> device_events;
    std::vector<Extent> extents(steps_.size());
    for (const KernelRecord& k : trace_.kernels) {
      device_events.push_back(Slice(k.name, "kernel", k.device_id, k.stream_id, k.start_ns,
                                    k.end_ns, k.correlation_id, json::object(), extents));
    }
    for (const MemcpyRecord& m : trace_.memcpys) {
      device_events.push_back(Slice(std::string(MemcpyKindName(m.copy_kind)), "memcpy", m.device_id,
                                    m.stream_id, m.start_ns, m.end_ns, m.correlation_id,
                                    json{{"bytes", m.bytes}}, extents));
    }
    for (const MemsetRecord& m : trace_.memsets) {
      device_events.push_back(Slice("memset", "memset", m.device_id, m.stream_id, m.start_ns,
                                    m.end_ns, m.correlation_id,
                                    json{{"bytes", m.bytes}, {"value", m.value}}, extents));
    }

    json events = json::array();
    AddMetadata(events);
    AddStepSlices(events, extents);
    for (json& event : device_events) events.push_back(std::move(event));
    AddMemoryCounter(events);
    return json{{"displayTimeUnit", "ns"}, {"traceEvents", std::move(events)}};
  }

 private:
  uint64_t EarliestTimestamp() const {
    uint64_t earliest = std::numeric_limits<uint64_t>::max();
    for (const KernelRecord& k : trace_.kernels) earliest = std::min(earliest, k.start_ns);
    for (const MemcpyRecord& m : trace_.memcpys) earliest = std::min(earliest, m.start_ns);
    for (const MemsetRecord& m : trace_.memsets) earliest = std::min(earliest, m.start_ns);
    for (const MemoryRecord& m : trace_.memory) earliest = std::min(earliest, m.timestamp_ns);
    for (const ProfiledStep& s : steps_) {
      if (s.host_end_ns > s.host_start_ns) earliest = std::min(earliest, s.host_start_ns);
    }
    return earliest == std::numeric_limits<uint64_t>::max() ? 0 : earliest;
  }

  // Microseconds since the origin; timestamps before it (none by construction) clamp to 0.
  double Micros(uint64_t ns) const {
    return ns > origin_ns_ ? static_cast<double>(ns - origin_ns_) / 1000.0 : 0.0;
  }

  static json StepArgs(const ProfiledStep& step) {
    json args{{"step", step.name},
              {"phase", std::string(StepPhaseName(step.phase))},
              {"micro_batch", step.micro_batch},
              {"external_id", step.external_id}};
    if (!step.node.empty()) args["node"] = step.node;
    return args;
  }

  json Slice(const std::string& name, const char* category, uint32_t device_id, uint32_t stream_id,
             uint64_t start_ns, uint64_t end_ns, uint32_t correlation_id, json args,
             std::vector<Extent>& extents) {
    devices_[device_id].insert(stream_id);
    args["correlation_id"] = correlation_id;
    auto step = step_of_correlation_.find(correlation_id);
    if (step != step_of_correlation_.end()) {
      args.update(StepArgs(steps_[step->second]));
      extents[step->second].Add(start_ns, std::max(start_ns, end_ns));
    }
    return json{{"name", name},
                {"cat", category},
                {"ph", "X"},
                {"pid", GpuPid(device_id)},
                {"tid", stream_id},
                {"ts", Micros(start_ns)},
                {"dur", end_ns > start_ns ? static_cast<double>(end_ns - start_ns) / 1000.0 : 0.0},
                {"args", std::move(args)}};
  }

  void AddMetadata(json& events) {
    for (const MemoryRecord& m : trace_.memory) {
      if (CountsAsDeviceMemory(m.memory_kind)) devices_[m.device_id];
    }
    events.push_back(json{{"name", "process_name"},
                          {"ph", "M"},
                          {"pid", kProgramPid},
                          {"args", {{"name", "memplan program"}}}});
    events.push_back(json{{"name", "thread_name"},
                          {"ph", "M"},
                          {"pid", kProgramPid},
                          {"tid", kStepsTid},
                          {"args", {{"name", "steps"}}}});
    for (const auto& [device, streams] : devices_) {
      events.push_back(json{{"name", "process_name"},
                            {"ph", "M"},
                            {"pid", GpuPid(device)},
                            {"args", {{"name", "GPU " + std::to_string(device)}}}});
      for (uint32_t stream : streams) {
        events.push_back(json{{"name", "thread_name"},
                              {"ph", "M"},
                              {"pid", GpuPid(device)},
                              {"tid", stream},
                              {"args", {{"name", "stream " + std::to_string(stream)}}}});
      }
    }
  }

  void AddStepSlices(json& events, const std::vector<Extent>& extents) const {
    for (size_t i = 0; i < steps_.size(); ++i) {
      const ProfiledStep& step = steps_[i];
      Extent extent;
      if (step.host_end_ns > step.host_start_ns) {
        extent.Add(step.host_start_ns, step.host_end_ns);
      } else if (!extents[i].empty()) {
        extent = extents[i];
      } else {
        continue;  // nothing says when it ran
      }
      json args = StepArgs(step);
      args["device_seconds"] = profile_.steps.at(i).device_seconds;
      events.push_back(json{{"name", step.name},
                            {"cat", "step"},
                            {"ph", "X"},
                            {"pid", kProgramPid},
                            {"tid", kStepsTid},
                            {"ts", Micros(extent.start_ns)},
                            {"dur", Micros(extent.end_ns) - Micros(extent.start_ns)},
                            {"args", std::move(args)}});
    }
  }

  // One "device memory" sample per allocation and release, replayed as attribution does.
  void AddMemoryCounter(json& events) const {
    std::vector<size_t> order;
    for (size_t i = 0; i < trace_.memory.size(); ++i) {
      if (CountsAsDeviceMemory(trace_.memory[i].memory_kind)) order.push_back(i);
    }
    std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) {
      return trace_.memory[a].timestamp_ns < trace_.memory[b].timestamp_ns;
    });
    std::map<uint32_t, int64_t> live_per_device;
    std::unordered_map<uint64_t, uint64_t> live_blocks;  // address -> bytes
    for (size_t index : order) {
      const MemoryRecord& record = trace_.memory[index];
      auto [live, inserted] = live_per_device.emplace(record.device_id, profile_.baseline_bytes);
      (void)inserted;
      if (record.operation == MemoryRecord::Operation::kAllocation) {
        live_blocks[record.address] = record.bytes;
        live->second += static_cast<int64_t>(record.bytes);
      } else {
        auto block = live_blocks.find(record.address);
        if (block == live_blocks.end()) continue;  // older than the trace
        live->second -= static_cast<int64_t>(block->second);
        live_blocks.erase(block);
      }
      events.push_back(json{{"name", "device memory"},
                            {"ph", "C"},
                            {"pid", GpuPid(record.device_id)},
                            {"ts", Micros(record.timestamp_ns)},
                            {"args", {{"bytes", live->second}}}});
    }
  }

  const ActivityTrace& trace_;
  const StepTable& steps_;
  const AttributedProfile& profile_;
  std::unordered_map<uint32_t, size_t> step_of_correlation_;
  uint64_t origin_ns_ = 0;
  std::map<uint32_t, std::set<uint32_t>> devices_;  // device -> streams seen
};

}  // namespace

std::string ChromeTraceJson(const ActivityTrace& trace, const StepTable& steps,
                            const AttributedProfile& profile) {
  return TraceBuilder(trace, steps, profile).Build().dump() + "\n";
}

Status WriteChromeTrace(const std::filesystem::path& path, const ActivityTrace& trace,
                        const StepTable& steps, const AttributedProfile& profile) {
  return WriteTextFile(path.string(), ChromeTraceJson(trace, steps, profile));
}

}  // namespace memplan::profiler
