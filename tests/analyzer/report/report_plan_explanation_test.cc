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
  c.largest_within_headroom = largest;  // no headroom: the same
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

TEST_CASE("explanation: each clause says only what its numbers show", "[report]") {
  SearchTrace trace;
  // fp16 fits the same m as fp32 and runs as fast: no "halves activations", no "0% more".
  trace.configurations = {Outcome(Precision::kFp32, RecomputeLabel::kNone, 8, 8, 100.0),
                          Outcome(Precision::kFp16, RecomputeLabel::kNone, 8, 8, 100.2)};
  trace.chosen = 1;
  CHECK(ExplainPlanChoice(trace) ==
        "fp16: m=8 fits without recompute (fp32: m=8) and runs on tensor cores, as many "
        "samples/s than fp32; m=8 is the largest micro-batch that fits.");
  // Slower in fp16: 90 / 100 - 1 = -10%, "10% fewer".
  trace.configurations[1] = Outcome(Precision::kFp16, RecomputeLabel::kNone, 8, 8, 90.0);
  CHECK_THAT(ExplainPlanChoice(trace), Catch::Contains("10% fewer samples/s than fp32"));
  // Neither precision fits without recompute: "nothing fits", never "m=0 fits".
  ConfigurationOutcome with = Outcome(Precision::kFp16, RecomputeLabel::kOptimal, 2, 2, 50.0);
  with.recomputed_nodes = 5;
  trace.configurations = {
      Outcome(Precision::kFp32, RecomputeLabel::kNone, 1, 0, 0.0, /*feasible=*/false),
      Outcome(Precision::kFp16, RecomputeLabel::kNone, 1, 0, 0.0, /*feasible=*/false), with};
  trace.chosen = 2;
  const std::string why = ExplainPlanChoice(trace);
  CHECK_THAT(
      why, Catch::StartsWith("fp16: nothing fits without recompute (fp32: nothing fits); "
                             "recomputing 5 nodes (optimal) lets m=2 fit (without: nothing fits)"));
  CHECK_THAT(why, !Catch::Contains("m=0"));
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

TEST_CASE("explanation: under a headroom every m it names is the one it recommends", "[report]") {
  // issue 43: "m=1880 fits ... m=1755 is the largest micro-batch that fits". m=1755 is the
  // largest under the headroom, m=1880 the largest under the budget itself.
  SearchTrace trace;
  ConfigurationOutcome fp32 = Outcome(Precision::kFp32, RecomputeLabel::kNone, 867, 867, 415.0);
  fp32.largest_fitting_micro_batch = 914;
  ConfigurationOutcome fp16 = Outcome(Precision::kFp16, RecomputeLabel::kNone, 1755, 1755, 2012.2);
  fp16.largest_fitting_micro_batch = 1880;
  trace.configurations = {fp32, fp16};
  trace.chosen = 1;
  // 2012.2 / 415 - 1 = 3.849 -> 385% more.
  CHECK(ExplainPlanChoice(trace) ==
        "fp16 halves activations so m=1755 fits without recompute (fp32: m=867) and runs on "
        "tensor cores, 385% more samples/s than fp32; m=1755 is the largest micro-batch under the "
        "headroom (m=1880 fits at --headroom 0).");
}

TEST_CASE("explanation: the throughput knee says its share of the best rate", "[report]") {
  SearchTrace trace;
  ConfigurationOutcome knee = Outcome(Precision::kFp32, RecomputeLabel::kNone, 256, 1755, 1983.2);
  knee.knee = true;
  knee.knee_best_micro_batch = 1755;
  knee.knee_best_samples_per_second = 2012.2;
  trace.configurations = {knee};
  trace.chosen = 0;
  // 1983.2 / 2012.2 = 0.98559 -> 98.6%.
  CHECK(ExplainPlanChoice(trace) ==
        "m=256 is the throughput knee: 98.6% of the samples/s of m=1755, the largest that fits.");
  // The fastest compared m is not the largest: both are named.
  trace.configurations[0].knee_best_micro_batch = 1024;
  CHECK(ExplainPlanChoice(trace) ==
        "m=256 is the throughput knee: 98.6% of the samples/s of m=1024 (the fastest; m=1755 is "
        "the largest that fits).");
}

}  // namespace
}  // namespace memplan
