#include "analyzer/report/plan_explanation.h"

#include <sstream>

#include "analyzer/text/number_format.h"

namespace memplan {
namespace {

// A ratio as a whole percentage ("85%").
std::string Percent(double ratio) { return FormatFixed(ratio * 100.0, 0) + "%"; }

// "85% more", "12% fewer", "as many": a relative change said the way its sign reads.
std::string MoreOrFewer(double change) {
  if (FormatFixed(change * 100.0, 0) == "0" || FormatFixed(change * 100.0, 0) == "-0")
    return "as many";
  return change > 0 ? Percent(change) + " more" : Percent(-change) + " fewer";
}

double SecondsPerSample(const PlanCandidate& c) {
  return c.global_batch > 0 ? c.step_seconds / static_cast<double>(c.global_batch) : 0.0;
}

bool WithoutRecompute(const ConfigurationOutcome& c) {
  return c.chosen.recompute == RecomputeLabel::kNone;
}

// "checkpointing 7 modules" (module unit: what the export wraps) or "recomputing 42 nodes".
std::string RecomputedWhat(const ConfigurationOutcome& c) {
  if (c.checkpointed_modules > 0)
    return "checkpointing " + std::to_string(c.checkpointed_modules) +
           (c.checkpointed_modules == 1 ? " module" : " modules");
  return "recomputing " + std::to_string(c.recomputed_nodes) + " nodes";
}

// The largest m a configuration recommends: under the headroom (the same as the largest that
// fits without one). Every clause compares these, so no two numbers of the sentence disagree.
int64_t LargestRecommended(const ConfigurationOutcome& c) { return c.largest_within_headroom; }

// "the largest under the headroom (m=1880 fits at --headroom 0)" or "the largest that fits".
std::string LargestText(const ConfigurationOutcome& c) {
  if (c.largest_fitting_micro_batch > c.largest_within_headroom)
    return "the largest under the headroom (m=" + std::to_string(c.largest_fitting_micro_batch) +
           " fits at --headroom 0)";
  return "the largest that fits";
}

// What m is, said so it cannot contradict "m=511 fits" elsewhere in the sentence: with a global
// batch G the planner takes the largest divisor of G that fits (or G itself), not the largest m;
// without one, the throughput knee or the largest under the headroom.
std::string WhyThisMicroBatch(const SearchTrace& trace, const ConfigurationOutcome& chosen) {
  const PlanCandidate& pick = chosen.chosen;
  const int64_t largest = chosen.largest_within_headroom;
  if (trace.fixed_micro_batch) return "is fixed by --micro-batch and fits";
  if (chosen.knee && chosen.knee_best_samples_per_second > 0) {
    const double share = pick.samples_per_second / chosen.knee_best_samples_per_second;
    std::string s = "is the throughput knee: " + FormatFixed(share * 100.0, 1) +
                    "% of the samples/s of m=" + std::to_string(chosen.knee_best_micro_batch);
    if (chosen.knee_best_micro_batch == largest)
      s += ", " + LargestText(chosen);
    else
      s += " (the fastest; m=" + std::to_string(largest) + " is " + LargestText(chosen) + ")";
    return s;
  }
  if (!trace.global_batch || pick.micro_batch >= largest) {
    if (chosen.largest_fitting_micro_batch > largest)
      return "is the largest micro-batch under the headroom (m=" +
             std::to_string(chosen.largest_fitting_micro_batch) + " fits at --headroom 0)";
    return "is the largest micro-batch that fits";
  }
  const int64_t g = *trace.global_batch;
  if (pick.micro_batch == g) return "is the whole global batch " + std::to_string(g) + " and fits";
  if (g % pick.micro_batch == 0)
    return "is the largest divisor of the global batch " + std::to_string(g) +
           " that fits (the largest micro-batch that fits is m=" + std::to_string(largest) + ")";
  return "is the micro-batch chosen for the global batch " + std::to_string(g) +
         " (the largest that fits is m=" + std::to_string(largest) + ")";
}

}  // namespace

std::string ExplainPlanChoice(const SearchTrace& trace) {
  const ConfigurationOutcome& chosen = trace.configurations.at(trace.chosen);
  const PlanCandidate& pick = chosen.chosen;
  // The last configuration of the same precision without recompute, and of fp32, to compare with.
  const ConfigurationOutcome* plain = nullptr;
  const ConfigurationOutcome* fp32 = nullptr;
  for (const ConfigurationOutcome& c : trace.configurations) {
    if (WithoutRecompute(c) && c.chosen.precision == pick.precision) plain = &c;
    if (WithoutRecompute(c) && c.chosen.precision == Precision::kFp32) fp32 = &c;
  }

  std::ostringstream why;
  if (!chosen.feasible && trace.fixed_micro_batch) {
    why << "the fixed micro-batch m=" << *trace.fixed_micro_batch << " does not fit the budget"
        << (trace.recompute == RecomputeChoice::kNone ? " without recompute"
                                                      : " with any plan tried")
        << "; drop --micro-batch to let memplan choose.";
    return why.str();
  }
  if (!chosen.feasible) return "nothing fits: even m=1 needs more than the budget.";

  if (pick.precision != Precision::kFp32 && fp32 != nullptr) {
    // Each clause says only what its numbers show: "halves activations" only where the 16-bit
    // plan fits a larger m than fp32, "nothing fits" rather than "m=0 fits".
    const int64_t half_m = plain ? LargestRecommended(*plain) : pick.micro_batch;
    const int64_t fp32_m = LargestRecommended(*fp32);
    if (half_m <= 0)
      why << PrecisionName(pick.precision) << ": nothing fits without recompute";
    else if (half_m > fp32_m)
      why << PrecisionName(pick.precision) << " halves activations so m=" << half_m
          << " fits without recompute";
    else
      why << PrecisionName(pick.precision) << ": m=" << half_m << " fits without recompute";
    why << " (fp32: " << (fp32_m > 0 ? "m=" + std::to_string(fp32_m) : "nothing fits") << ")";
    if (fp32->feasible && fp32->chosen.samples_per_second > 0)
      why << " and runs on tensor cores, "
          << MoreOrFewer(pick.samples_per_second / fp32->chosen.samples_per_second - 1.0)
          << " samples/s than fp32";
    why << "; ";
  }
  if (!WithoutRecompute(chosen) && plain != nullptr) {
    why << RecomputedWhat(chosen) << " (" << RecomputeLabelName(pick.recompute)
        << ") lets m=" << pick.micro_batch << " fit (without: "
        << (LargestRecommended(*plain) > 0 ? "m=" + std::to_string(LargestRecommended(*plain))
                                           : std::string("nothing fits"))
        << ")";
    const double reference_cost = SecondsPerSample(plain->chosen);
    if (plain->feasible && reference_cost > 0)
      why << " at " << Percent(SecondsPerSample(pick) / reference_cost - 1.0)
          << " more time per sample";
    why << ".";
  } else if (!WithoutRecompute(chosen)) {
    // A forced --recompute kind: no plan without recompute was kept to compare with.
    why << RecomputedWhat(chosen) << " (" << RecomputeLabelName(pick.recompute)
        << ", as asked) fits m=" << pick.micro_batch << ".";
  } else {
    why << "m=" << pick.micro_batch << " " << WhyThisMicroBatch(trace, chosen);
    if (pick.accumulation_steps > 1)
      why << "; " << pick.accumulation_steps << " accumulation steps reach the global batch "
          << pick.global_batch;
    // The first recompute configuration of this precision that would allow a larger m.
    for (const ConfigurationOutcome& c : trace.configurations) {
      if (WithoutRecompute(c) || !c.feasible || c.chosen.precision != pick.precision ||
          c.chosen.micro_batch <= pick.micro_batch)
        continue;
      const double chosen_cost = SecondsPerSample(pick);
      if (chosen_cost > 0)
        why << "; recomputing (" << RecomputeLabelName(c.chosen.recompute)
            << ") would allow m=" << c.chosen.micro_batch << " but costs "
            << Percent(SecondsPerSample(c.chosen) / chosen_cost - 1.0) << " more time per sample";
      break;
    }
    why << ".";
  }
  return why.str();
}

}  // namespace memplan
