#pragma once
// `memplan verify` results as text and as memplan/1 JSON (docs/verify.md).

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "analyzer/program/training_program.h"
#include "graph/graph.h"
#include "runtime/verification.h"

namespace memplan::cli {

// What was verified, for the report header.
struct VerifiedPlanInfo {
  std::string model;
  std::string plan_source;  // "--plan plan.json", "flags", "planner (--gpu 24G)"
  ProgramOptions program;
  std::vector<std::string> recompute;  // node names
  // --fused-loss: the head and cross entropy run as one node; the program's loss is the sum over
  // its scalar (plan.loss "sum").
  bool fused_loss = false;
};

nlohmann::ordered_json VerificationToJson(const VerificationReport& report,
                                          const VerifiedPlanInfo& info);
std::string FormatVerificationText(const VerificationReport& report, const VerifiedPlanInfo& info);

}  // namespace memplan::cli
