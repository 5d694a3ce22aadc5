// The "why this plan" sentence, written from a hand-made search trace.

#include <catch2/catch.hpp>

#include "analyzer/report/plan_explanation.h"

namespace memplan {
namespace {

ConfigurationOutcome Outcome(Precision precision, RecomputeLabel recompute, int64_t m,
                             int64_t largest, double samples_per_second, bool feasible = true) {
  ConfigurationOutcome c;
  c.chosen.precision = precision;
  c.chosen.recompute = recompute;
  c.chosen.micro_batch = m;
  c.chosen.accumulation_steps = 1;
  c.chosen.global_batch = m;
  c.chosen.samples_per_second = samples_per_second;
  c.chosen.step_seconds = samples_per_second > 0 ? static_cast<double>(m) / samples_per_second : 0;
  c.feasible = feasible;
  c.largest_fitting_micro_batch = largest;
  return c;
}

TEST_CASE("explanation: 16-bit precision against fp32", "[report]") {
  SearchTrace trace;
  trace.configurations = {Outcome(Precision::kFp32, RecomputeLabel::kNone, 32, 32, 100.0),
                          Outcome(Precision::kBf16, RecomputeLabel::kNone, 64, 64, 185.0)};
  trace.chosen = 1;
  // 185 / 100 - 1 = 85% more samples/s.
  CHECK(ExplainPlanChoice(trace) ==
        "bf16 halves activations so m=64 fits without recompute (fp32: m=32) and runs on tensor "
        "cores, 85% more samples/s than fp32; m=64 is the largest micro-batch that fits.");
}

TEST_CASE("explanation: recompute against the plan without it", "[report]") {
  SearchTrace trace;
  ConfigurationOutcome with = Outcome(Precision::kFp32, RecomputeLabel::kOptimal, 16, 16, 90.0);
  with.recomputed_nodes = 3;
  trace.configurations = {with, Outcome(Precision::kFp32, RecomputeLabel::kNone, 8, 8, 100.0)};
  trace.chosen = 0;
  // Seconds per sample: 1/90 against 1/100, so 100/90 - 1 = 11.1% more time per sample.
  CHECK(ExplainPlanChoice(trace) ==
        "recomputing 3 nodes (optimal) lets m=16 fit (without: m=8) at 11% more time per sample.");
  // Chosen without recompute, the faster-per-sample plan: the larger m it passed up is named.
  trace.chosen = 1;
  CHECK(ExplainPlanChoice(trace) ==
        "m=8 is the largest micro-batch that fits; recomputing (optimal) would allow m=16 but "
        "costs 11% more time per sample.");
}

TEST_CASE("explanation: nothing fits, a fixed micro-batch, a forced recompute", "[report]") {
  SearchTrace trace;
  trace.configurations = {
      Outcome(Precision::kFp32, RecomputeLabel::kNone, 1, 0, 0.0, /*feasible=*/false)};
  CHECK(ExplainPlanChoice(trace) == "nothing fits: even m=1 needs more than the budget.");
  trace.fixed_micro_batch = 4;
  CHECK(ExplainPlanChoice(trace) ==
        "the fixed micro-batch m=4 does not fit the budget without recompute; drop --micro-batch "
        "to let memplan choose.");
  trace.recompute = RecomputeChoice::kAll;
  CHECK(ExplainPlanChoice(trace) ==
        "the fixed micro-batch m=4 does not fit the budget with any plan tried; drop "
        "--micro-batch to let memplan choose.");

  SearchTrace forced;
  ConfigurationOutcome all = Outcome(Precision::kFp32, RecomputeLabel::kAll, 8, 8, 50.0);
  all.recomputed_nodes = 5;
  forced.configurations = {all};
  forced.recompute = RecomputeChoice::kAll;
  CHECK(ExplainPlanChoice(forced) == "recomputing 5 nodes (all, as asked) fits m=8.");
}

TEST_CASE("explanation: with a global batch m is the largest divisor, not the largest m",
          "[report]") {
  SearchTrace trace;
  trace.global_batch = 1024;
  // m=511 fits, but 511 does not divide 1024; the largest divisor of 1024 up to 511 is 256, so
  // k = 1024 / 256 = 4.
  ConfigurationOutcome pick = Outcome(Precision::kFp32, RecomputeLabel::kNone, 256, 511, 100.0);
  pick.chosen.accumulation_steps = 4;
  pick.chosen.global_batch = 1024;
  trace.configurations = {pick};
  CHECK(ExplainPlanChoice(trace) ==
        "m=256 is the largest divisor of the global batch 1024 that fits (the largest "
        "micro-batch that fits is m=511); 4 accumulation steps reach the global batch 1024.");
  // A global batch that fits whole is not "the largest micro-batch that fits".
  trace.global_batch = 64;
  trace.configurations = {Outcome(Precision::kFp32, RecomputeLabel::kNone, 64, 511, 100.0)};
  CHECK(ExplainPlanChoice(trace) == "m=64 is the whole global batch 64 and fits.");
  // A fixed micro-batch is the user's, not the largest.
  trace.global_batch.reset();
  trace.fixed_micro_batch = 64;
  CHECK(ExplainPlanChoice(trace) == "m=64 is fixed by --micro-batch and fits.");
}

}  // namespace
}  // namespace memplan
