#pragma once
// Fit probes: whether a fixed micro-batch fits one recompute choice, for searches that probe many
// programs (the module-recompute search). A probe derives its program once and simulates it at
// any micro-batch, where PlanTraining would derive it again per call, simulate the timeline and
// estimate times. Its peak is the one PlanTraining judges the micro-batch by.
//
// Usage:
//   MEMPLAN_TRY(std::unique_ptr<FitProbe> probe, FitProbe::Derive(graph, options));
//   MEMPLAN_TRY(FixedMicroBatchFit fit, probe->At(m));
//   bool fits = fit.peak_bytes <= fit.budget_bytes - fit.headroom_bytes;
//   MEMPLAN_TRY(TrainingPlan plan, probe->Plan(RecomputeLabel::kOptimal));

#include <cstdint>
#include <memory>
#include <optional>

#include "analyzer/planning/planner.h"
#include "graph/expected.h"
#include "graph/graph.h"

namespace memplan {

// PlanTraining's chosen.peak_bytes with options.micro_batch = m, and the limits it judges it by.
struct FixedMicroBatchFit {
  int64_t peak_bytes = 0;
  int64_t budget_bytes = 0;
  int64_t headroom_bytes = 0;
};

class FitProbe {
 public:
  // Derives options.program (accumulation_steps ignored: a probe at m uses the k PlanTraining
  // gives a fixed m). Errors: as PlanTraining's. `graph` must outlive the probe.
  static Expected<std::unique_ptr<FitProbe>> Derive(const Graph& graph,
                                                    const PlannerOptions& options);
  ~FitProbe();
  FitProbe(const FitProbe&) = delete;
  FitProbe& operator=(const FitProbe&) = delete;

  // The peak PlanTraining would report as chosen.peak_bytes with options.micro_batch = m.
  Expected<FixedMicroBatchFit> At(int64_t micro_batch);

  // PlanTraining(graph, options) with options.recompute_label = label, planned on the probe's
  // program (copied into the plan) and the simulations its probes already ran, instead of
  // deriving the program again: the module-recompute search plans a prefix it probed. The probe
  // answers At() as before.
  Expected<TrainingPlan> Plan(std::optional<RecomputeLabel> label);

 private:
  struct State;
  explicit FitProbe(std::unique_ptr<State> state);
  std::unique_ptr<State> state_;
};

}  // namespace memplan
