#include "analyzer/joint_search.h"

#include <algorithm>
#include <cstdio>
#include <sstream>

namespace memplan {

Expected<PrecisionChoice> ParsePrecisionChoice(std::string_view text) {
  if (text == "fp32") return PrecisionChoice::kFp32;
  if (text == "fp16") return PrecisionChoice::kFp16;
  if (text == "bf16") return PrecisionChoice::kBf16;
  if (text == "auto") return PrecisionChoice::kAuto;
  return MakeError("--precision: expected fp32, fp16, bf16 or auto, got '" + std::string(text) + "'");
}

Expected<RecomputeChoice> ParseRecomputeChoice(std::string_view text) {
  if (text == "none") return RecomputeChoice::kNone;
  if (text == "all") return RecomputeChoice::kAll;
  if (text == "sqrt") return RecomputeChoice::kSqrt;
  if (text == "optimal") return RecomputeChoice::kOptimal;
  if (text == "auto") return RecomputeChoice::kAuto;
  return MakeError("--recompute: expected none, all, sqrt, optimal or auto, got '" +
                   std::string(text) + "'");
}

namespace {

// The precisions the search tries: auto = fp32 plus the 16-bit format the GPU runs fastest
// (bf16 where supported: no loss scaling needed; fp16 otherwise).
std::vector<Precision> PrecisionsToTry(PrecisionChoice choice, const GpuSpec& gpu) {
  switch (choice) {
    case PrecisionChoice::kFp32: return {Precision::kFp32};
    case PrecisionChoice::kFp16: return {Precision::kFp16};
    case PrecisionChoice::kBf16: return {Precision::kBf16};
    case PrecisionChoice::kAuto:
      return {Precision::kFp32, gpu.supports_bf16 ? Precision::kBf16 : Precision::kFp16};
  }
  return {Precision::kFp32};
}

bool Better(const TrainingPlan& a, const TrainingPlan& b) {
  if (a.feasible != b.feasible) return a.feasible;
  if (!a.feasible) return a.chosen.peak_bytes < b.chosen.peak_bytes;
  return a.chosen.samples_per_second > b.chosen.samples_per_second;
}

std::string Percent(double ratio) {
  char buffer[32];
  std::snprintf(buffer, sizeof(buffer), "%.0f%%", ratio * 100.0);
  return buffer;
}

// Keeps candidates no other candidate beats on both memory and throughput (fitting ones only,
// plus the first non-fitting micro-batch of each configuration to show where memory runs out).
std::vector<PlanCandidate> ParetoFrontier(std::vector<PlanCandidate> all) {
  std::vector<PlanCandidate> frontier;
  for (const PlanCandidate& c : all) {
    if (!c.fits) continue;
    bool dominated = std::any_of(all.begin(), all.end(), [&](const PlanCandidate& o) {
      return o.fits && o.peak_bytes <= c.peak_bytes && o.samples_per_second >= c.samples_per_second &&
             (o.peak_bytes < c.peak_bytes || o.samples_per_second > c.samples_per_second);
    });
    if (!dominated) frontier.push_back(c);
  }
  for (const PlanCandidate& c : all)
    if (!c.fits) {
      frontier.push_back(c);
      break;
    }
  std::sort(frontier.begin(), frontier.end(), [](const PlanCandidate& a, const PlanCandidate& b) {
    return a.peak_bytes != b.peak_bytes ? a.peak_bytes < b.peak_bytes
                                        : a.samples_per_second > b.samples_per_second;
  });
  return frontier;
}

struct Configuration {
  TrainingPlan plan;
  PlannerOptions options;
  std::vector<std::string> checkpoints;
};

}  // namespace

Expected<JointPlan> PlanJointly(const Graph& graph, const PlannerOptions& base,
                                const SearchOptions& search) {
  std::vector<Configuration> configurations;
  for (Precision precision : PrecisionsToTry(search.precision, base.gpu)) {
    PlannerOptions options = base;
    options.program.precision = precision;
    MEMPLAN_TRY(TrainingPlan plan, PlanTraining(graph, options));
    configurations.push_back({std::move(plan), std::move(options), {}});
  }

  size_t best = 0;
  for (size_t i = 1; i < configurations.size(); ++i)
    if (Better(configurations[i].plan, configurations[best].plan)) best = i;

  JointPlan result;
  std::vector<PlanCandidate> all;
  for (const Configuration& c : configurations)
    all.insert(all.end(), c.plan.candidates.begin(), c.plan.candidates.end());

  Configuration& chosen = configurations[best];
  std::ostringstream why;
  const PlanCandidate& pick = chosen.plan.chosen;
  if (!chosen.plan.feasible) {
    why << "nothing fits: even m=1 needs more than the budget.";
  } else if (configurations.size() > 1) {
    const Configuration& other = configurations[best == 0 ? 1 : 0];
    if (pick.precision != Precision::kFp32) {
      why << PrecisionName(pick.precision) << " roughly halves activations, so m="
          << pick.micro_batch << " fits (fp32: m=" << other.plan.largest_fitting_micro_batch
          << ") and runs on tensor cores: ";
      if (other.plan.feasible && other.plan.chosen.samples_per_second > 0) {
        why << Percent(pick.samples_per_second / other.plan.chosen.samples_per_second - 1.0)
            << " more samples/s than fp32.";
      } else {
        why << "fp32 does not fit at all.";
      }
    } else {
      why << "fp32 is as fast as mixed precision here and needs no loss scaling.";
    }
  } else {
    why << "m=" << pick.micro_batch << " is the largest micro-batch that fits";
    if (pick.accumulation_steps > 1)
      why << "; " << pick.accumulation_steps << " accumulation steps reach the global batch "
          << pick.global_batch;
    why << ".";
  }
  result.explanation = why.str();
  result.plan = std::move(chosen.plan);
  result.options_used = std::move(chosen.options);
  result.checkpoint_nodes = std::move(chosen.checkpoints);
  if (configurations.size() > 1) result.plan.candidates = ParetoFrontier(std::move(all));
  return result;
}

}  // namespace memplan
