#pragma once
// The plan flags shared by every verb that plans (analyze, verify, baseline, check, report,
// profile): GPU, batch targets, precision, optimizer, loss, allocator model. They resolve into
// PlannerOptions; errors are one-line usage errors (exit 2).

#include <CLI/CLI.hpp>
#include <string>

#include "analyzer/joint_search.h"
#include "analyzer/planner.h"
#include "graph/expected.h"
#include "graph/graph.h"
#include "tools/memplan/cli_common.h"

namespace memplan::cli {

struct PlanFlags {
  AnalysisFlags analysis;
  std::string gpu;
  std::string global_batch;
  std::string micro_batch;
  std::string reserve;
  std::string precision = "auto";
  std::string optimizer = "adam";
  std::string loss = "auto";
  std::string zero_grad = "set_to_none";
  std::string allocator = "caching";
  std::string recompute = "auto";
  std::string fp32_ops;
  std::string fp16_ops;
  std::string loss_scaling;  // empty = the precision's default
  bool clip = false;
};

// Adds the analysis flags plus --gpu, --global-batch, --micro-batch, --reserve, --precision,
// --optimizer, --loss, --zero-grad, --allocator, --recompute, --fp32-ops, --fp16-ops,
// --loss-scaling, --clip-grad.
void AddPlanFlags(CLI::App& command, PlanFlags& flags);

struct PlanRequest {
  AnalysisRequest analysis;
  PlannerOptions planner;
  SearchOptions search;  // precision and recompute choices for the joint search
};

// Validates every flag (sizes, enums, positive integers). --batch N is the micro-batch (it binds
// the batch symbol), the same as --micro-batch N. REQUIRES: --gpu given (the caller says which
// verbs need it) when `require_gpu`.
Expected<PlanRequest> ResolvePlanFlags(const PlanFlags& flags, bool require_gpu);

// Binds the request's --dim values (and not the batch) for `graph` into request.planner.bindings.
Status BindPlanSymbols(const Graph& graph, PlanRequest& request);

}  // namespace memplan::cli
