#include "analyzer/report/peak_step_report.h"

#include <algorithm>

#include "analyzer/text/memory_size.h"

namespace memplan {

std::vector<PeakStepAllocation> PeakStepAllocations(const TrainingPlan& plan) {
  std::vector<PeakStepAllocation> out;
  const SimulationResult& sim = plan.simulation;
  const LogicalTime at = sim.peak_at.step;
  if (at < 0 || static_cast<size_t>(at) >= plan.program.steps.size()) return out;
  const std::vector<int64_t>& sizes = sim.buffer_bytes;
  for (const MemoryEvent& e : plan.program.step(at).begin) {
    if (e.action != MemoryEvent::Action::kAlloc || e.buffer.index() >= sizes.size()) continue;
    const Buffer& b = plan.program.buffer(e.buffer);
    if (b.on_host() || sizes[e.buffer.index()] == 0) continue;
    out.push_back({b.name, b.category, sizes[e.buffer.index()]});
  }
  std::sort(out.begin(), out.end(), [](const PeakStepAllocation& a, const PeakStepAllocation& b) {
    return a.bytes != b.bytes ? a.bytes > b.bytes : a.buffer < b.buffer;
  });
  return out;
}

std::string PeakStepAllocationsText(const std::vector<PeakStepAllocation>& allocations,
                                    size_t shown) {
  if (allocations.empty()) return "";
  std::string s = "allocated there: ";
  for (size_t i = 0; i < std::min(shown, allocations.size()); ++i)
    s += (i ? ", " : "") + allocations[i].buffer + " " + FormatBytes(allocations[i].bytes) + " (" +
         std::string(MemoryCategoryName(allocations[i].category)) + ")";
  if (allocations.size() > shown)
    s += ", " + std::to_string(allocations.size() - shown) + " more (--json, peak.allocations)";
  return s;
}

nlohmann::ordered_json PeakStepAllocationsJson(const std::vector<PeakStepAllocation>& allocations) {
  nlohmann::ordered_json list = nlohmann::ordered_json::array();
  for (const PeakStepAllocation& a : allocations)
    list.push_back({{"buffer", a.buffer},
                    {"category", std::string(MemoryCategoryName(a.category))},
                    {"bytes", a.bytes}});
  return list;
}

}  // namespace memplan
