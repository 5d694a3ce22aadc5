#pragma once
// A hand-made TrainingPlan for the report tests: a six-step program and a timeline whose bytes
// are written out below, so every number the charts show can be derived by hand.
//
//   step  kind       phase      timeline point  live bytes by category             total
//   0     setup      setup      0 (setup)       parameters 100                     100
//   1     load       forward    1 (it 0, mb 0)  parameters 100, other 20           120
//   2     forward    forward    2               + activations 50                   170
//   3     loss       forward    3               + transients 10                    180
//   4     backward   backward   4               params 100, grads 100, act 50,
//                                               transients 30                      280  <- peak
//   5     optimizer  optimizer  5 (it 0)        params 100, grads 100, state 60    260
//
// Workspace stays empty, so six categories are non-empty.

#include <string>

#include "analyzer/planning/planner.h"
#include "analyzer/report/analysis_report.h"
#include "graph/graph.h"

namespace memplan::testing {

struct ReportFixture {
  Graph graph;
  PlannerOptions options;
  TrainingPlan plan;
  AnalysisReport report;

  explicit ReportFixture(int64_t budget_bytes = 300) {
    options.gpu.name = "test-gpu";
    options.gpu.memory_bytes = budget_bytes + 1000;
    options.gpu.context_bytes = 1000;
    options.allocator = AllocatorKind::kExact;

    TrainingProgram& p = plan.program;
    const StepKind kinds[] = {StepKind::kAllocateParameters,
                              StepKind::kLoadMicroBatch,
                              StepKind::kForward,
                              StepKind::kLoss,
                              StepKind::kBackward,
                              StepKind::kOptimizerStep};
    const char* names[] = {"parameters", "load", "MatMul_1", "loss", "MatMul_1", "optimizer"};
    for (int i = 0; i < 6; ++i) {
      Step step;
      step.kind = kinds[i];
      step.name = names[i];
      p.steps.push_back(step);
    }
    p.setup = {0, 1};
    p.micro_batch = {1, 5};
    p.optimizer = {5, 6};
    p.loss_step = 3;

    struct Row {
      LogicalTime step;
      int iteration;
      int64_t micro_batch;
      int64_t parameters, gradients, state, activations, transients, other;
    };
    const Row rows[] = {{0, -1, -1, 100, 0, 0, 0, 0, 0},   {1, 0, 0, 100, 0, 0, 0, 0, 20},
                        {2, 0, 0, 100, 0, 0, 50, 0, 20},   {3, 0, 0, 100, 0, 0, 50, 10, 20},
                        {4, 0, 0, 100, 100, 0, 50, 30, 0}, {5, 0, -1, 100, 100, 60, 0, 0, 0}};
    for (const Row& r : rows) {
      TimelinePoint point;
      point.at = {r.step, r.iteration, r.micro_batch};
      point.by_category[MemoryCategory::kParameters] = r.parameters;
      point.by_category[MemoryCategory::kGradients] = r.gradients;
      point.by_category[MemoryCategory::kOptimizerState] = r.state;
      point.by_category[MemoryCategory::kActivations] = r.activations;
      point.by_category[MemoryCategory::kTransients] = r.transients;
      point.by_category[MemoryCategory::kOther] = r.other;
      point.live_bytes = point.by_category.Total();
      point.allocated_bytes = point.live_bytes;
      point.reserved_bytes = point.live_bytes;
      plan.simulation.timeline.push_back(point);
    }
    SimulationResult& sim = plan.simulation;
    sim.allocator = "exact";
    sim.peak_bytes = 280;
    sim.peak_at = {4, 0, 0};
    sim.peak_step_name = "backward MatMul_1";
    sim.peak_breakdown = sim.timeline[4].by_category;

    plan.feasible = budget_bytes >= 280;
    plan.budget_bytes = budget_bytes;
    plan.chosen.micro_batch = 4;
    plan.chosen.accumulation_steps = 1;
    plan.chosen.global_batch = 4;
    plan.chosen.peak_bytes = 280;
    plan.chosen.exact_peak_bytes = 280;
    plan.chosen.fits = plan.feasible;
    plan.chosen.samples_per_second = 400;
    plan.chosen.step_seconds = 0.01;
    PlanCandidate smaller = plan.chosen;
    smaller.micro_batch = 2;
    smaller.global_batch = 2;
    smaller.peak_bytes = 190;
    smaller.samples_per_second = 250;
    plan.candidates = {smaller, plan.chosen};

    report.model_path = "models/tiny.onnx";
    report.model_name = "tiny";
    report.graph = &graph;
    report.options = &options;
    report.plan = &plan;
    FillPlanReport(report);
  }
  ReportFixture(const ReportFixture&) = delete;  // `report` points into the members
  ReportFixture& operator=(const ReportFixture&) = delete;
};

}  // namespace memplan::testing
