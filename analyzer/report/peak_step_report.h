#pragma once
// What the peak step itself allocates: the tensors its kernel creates at Begin (outputs, gradient
// outputs, workspace), each with its category and size. It explains two equal figures in the
// breakdown that are two tensors, not one counted twice (issue 43: a cross-entropy backward at the
// peak shows 9.6 GiB of workspace, nll_loss_backward's gradient of the log-probs, and 9.6 GiB of
// transients, _log_softmax_backward_data's gradient of the logits written from it).

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "analyzer/planning/planner.h"

namespace memplan {

struct PeakStepAllocation {
  std::string buffer;  // the buffer's name ("grad(logits)", "loss.workspace")
  MemoryCategory category = MemoryCategory::kTransients;
  int64_t bytes = 0;
};

// The device buffers the plan's peak step allocates at its Begin, largest first (ties by name);
// empty when the peak is not at a step or the step allocates nothing.
std::vector<PeakStepAllocation> PeakStepAllocations(const TrainingPlan& plan);

// The text report's line under "peak in ...": "allocated there: grad(logits) 9.6 GiB
// (transients), loss.workspace 9.6 GiB (workspace)", the first `shown` of them and "N more";
// empty when there are none.
std::string PeakStepAllocationsText(const std::vector<PeakStepAllocation>& allocations,
                                    size_t shown);

// The JSON array peak.allocations: [{"buffer", "category", "bytes"}], every one.
nlohmann::ordered_json PeakStepAllocationsJson(const std::vector<PeakStepAllocation>& allocations);

}  // namespace memplan
