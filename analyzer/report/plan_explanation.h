#pragma once
// The one sentence reports print under "Why" (text), "explanation" (JSON) and in the HTML report:
// why the joint search chose its plan, written from the search's trace
// (analyzer/planning/joint_search.h). The planner decides; this file only words the decision. E.g.
//   "bf16 halves activations so m=64 fits without recompute (fp32: m=32) and runs on tensor
//    cores, 85% more samples/s than fp32; m=64 is the largest micro-batch that fits."

#include <string>

#include "analyzer/planning/joint_search.h"

namespace memplan {

// REQUIRES: trace.chosen indexes trace.configurations.
std::string ExplainPlanChoice(const SearchTrace& trace);

}  // namespace memplan
