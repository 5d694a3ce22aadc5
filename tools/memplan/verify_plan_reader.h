#pragma once
// `memplan verify --plan PLAN`'s reader: a plan as `memplan analyze --json` prints it
// (docs/json_schema.md), applied to the model verify runs (its attention rewrite, bindings,
// fused loss, recompute set and placement). Apart from verify_command.cc so that the fuzz target
// tests/fuzz/fuzz_verify_plan.cc links it.

#include <functional>
#include <memory>
#include <string>

#include "analyzer/derivation/program_derivation.h"
#include "analyzer/pipeline/planned_model.h"
#include "graph/expected.h"
#include "graph/graph.h"
#include "graph/symbols.h"
#include "runtime/verification.h"

namespace memplan::cli {

// The runtime's ranks (runtime/rank_group.h) are data-parallel: each runs whole kernels, so a
// program split by --tp (analyzer/parallel/tensor_parallel.h) has no kernel that computes a part.
inline constexpr const char* kTensorParallelNotExecuted =
    "the runtime does not execute tensor-parallel plans (--tp is planned only: its ranks run "
    "whole kernels); verify the same plan without --tp";

// A plan and, for a --fused-loss plan, the model as it was before the head and loss were fused
// (VerifyPlan::unfused_graph points into `unfused`).
struct LoadedPlan {
  VerifyPlan plan;
  std::unique_ptr<Graph> unfused;
};

// The reference a --fused-loss plan is checked against: the model before the head and loss were
// fused, imported again (a Graph is not copyable) and rewritten by `attention` as the planned
// graph was. Puts it in `loaded.unfused` and points loaded.plan.unfused_graph at it, with
// `loss` as its loss.
Status LoadUnfusedReference(const PlanRequest& request, LossKind loss,
                            const std::function<Status(Graph&)>& attention, LoadedPlan& loaded);

// --fused-loss on `graph` (after its attention rewrite, as analyze applies it) for a plan file:
// the reference as LoadUnfusedReference loads it, and the plan's loss becomes the program's (a
// sum over the fused scalar) while the unfused graph keeps `loss`.
Status FuseLossForVerify(Graph& graph, const PlanRequest& request, LossKind loss,
                         const Bindings& dims, const std::function<Status(Graph&)>& attention,
                         LoadedPlan& loaded);

// The plan in `text` (read from `path`, which errors name) applied to `graph`, the model
// request.analysis.model names. Every field it reads is typed: a field of the wrong type or out
// of range is an error naming it, never a default, an exception or a crash.
Expected<LoadedPlan> PlanFromJsonText(Graph& graph, const std::string& text,
                                      const std::string& path, const PlanRequest& request);
// PlanFromJsonText of the file at `path`.
Expected<LoadedPlan> PlanFromJson(Graph& graph, const std::string& path,
                                  const PlanRequest& request);

}  // namespace memplan::cli
