// `memplan explain`'s changes (SearchOomAlternatives, analyzer/alternatives/alternative_search.h):
// which it tries for a run that ran out of memory, with which flags, and how they rank. The
// planner is a fake whose bytes follow from the flags by the rules below, so every outcome is
// derived by hand.

#include <catch2/catch.hpp>

#include <string>
#include <vector>

#include "analyzer/alternatives/alternative_search.h"

namespace memplan {
namespace {

// A made-up run, planned by rules:
//   peak           100 B of model state + 10 B per sample of the micro-batch, a quarter with
//                  --recompute auto, half with --precision bf16 (or fp16), + 50 B of
//                  fragmentation unless --alloc-conf is set
//   budget         500 B
//   samples/s      100, -30 with recompute, +50 with a 16-bit precision, -10 below m = 64
//   --fused-loss   refused: the model has no LM head
struct FakeRun {
  std::vector<std::string> asked;

  Expected<AlternativePlan> Plan(const PlanFlags& f) {
    asked.push_back(PlanFlagsAsArguments(f));
    if (f.fused_loss) return MakeError("--fused-loss: no LM head");
    const int64_t m = f.micro_batch.value_or(64);
    int64_t activations = 10 * m;
    double rate = 100;
    if (f.recompute == "auto") {
      activations /= 4;
      rate -= 30;
    }
    if (f.precision == "bf16" || f.precision == "fp16") {
      activations /= 2;
      rate += 50;
    }
    if (m < 64) rate -= 10;
    AlternativePlan plan;
    plan.chosen.micro_batch = m;
    plan.chosen.peak_bytes = 100 + activations + (f.alloc_conf ? 0 : 50);
    plan.chosen.samples_per_second = rate;
    plan.budget_bytes = 500;
    plan.fits = plan.chosen.peak_bytes <= plan.budget_bytes;
    return plan;
  }
};

AlternativeContext RunContext() {
  AlternativeContext context;
  context.asked.micro_batch = 64;
  context.asked.precision = "fp32";
  context.asked.recompute = "none";  // explain's default: the run's script recomputes nothing
  context.budget_bytes = 500;
  context.persistent_state_bytes = 100;
  context.gpu_supports_bf16 = true;
  return context;
}

TEST_CASE("explain's changes: each planned once, the micro-batch keeping the global batch",
          "[alternatives]") {
  FakeRun run;
  OomRun oom;
  oom.micro_batch = 64;
  oom.accumulation_steps = 2;
  oom.oom_request_bytes = int64_t{3} << 30;  // 3 GiB: max_split_size_mb:3072
  const AlternativeSearch search = SearchOomAlternatives(
      RunContext(), oom,
      [&run](const PlanFlags& flags, const PlanFlags&) { return run.Plan(flags); });
  // The run at m = 64: 100 + 640 + 50 = 790 B. m = 32 (global 64 x 2 = 128): 100 + 320 + 50 =
  // 470 fits, so the search stops there; recompute: 100 + 160 + 50 = 310; bf16: 100 + 320 + 50 =
  // 470; --fused-loss refused; expandable_segments: 100 + 640 = 740; max_split_size_mb: 740.
  REQUIRE(run.asked.size() == 6);
  CHECK(run.asked[0] == "--global-batch 128 --micro-batch 32 --precision fp32 --recompute none");
  CHECK(run.asked[1] == "--micro-batch 64 --precision fp32 --recompute auto");
  CHECK(run.asked[2] == "--micro-batch 64 --precision bf16 --recompute none");
  CHECK(run.asked[4] ==
        "--micro-batch 64 --precision fp32 --alloc-conf expandable_segments:True "
        "--recompute none");
  CHECK(run.asked[5] ==
        "--micro-batch 64 --precision fp32 --alloc-conf max_split_size_mb:3072 "
        "--recompute none");
  // Ranked: the fits by samples/s (bf16 150, m = 32 90, recompute 70), then the two allocator
  // settings (equal rate and peak: in the order tried).
  REQUIRE(search.planned.size() == 5);
  CHECK(search.planned[0].kinds == std::vector<AlternativeKind>{AlternativeKind::kPrecision});
  CHECK(search.planned[0].plan.chosen.peak_bytes == 470);
  CHECK(search.planned[1].kinds == std::vector<AlternativeKind>{AlternativeKind::kMicroBatch});
  CHECK(search.planned[1].plan.chosen.micro_batch == 32);
  CHECK(search.planned[2].kinds == std::vector<AlternativeKind>{AlternativeKind::kRecompute});
  CHECK(search.planned[2].plan.chosen.peak_bytes == 310);
  CHECK(search.planned[3].change.alloc_conf == "expandable_segments:True");
  CHECK_FALSE(search.planned[3].plan.fits);
  CHECK(search.planned[4].change.alloc_conf == "max_split_size_mb:3072");
  REQUIRE(search.skipped.size() == 1);
  CHECK(search.skipped[0].kinds == std::vector<AlternativeKind>{AlternativeKind::kFusedLoss});
  CHECK(search.skipped[0].reason == "--fused-loss: no LM head");
}

TEST_CASE("explain's changes: what the run already has is not tried again", "[alternatives]") {
  FakeRun run;
  AlternativeContext context = RunContext();
  context.asked.micro_batch = 1;
  context.asked.precision = "bf16";
  context.asked.recompute = "auto";
  context.asked.alloc_conf = "expandable_segments:True";
  OomRun oom;                                // m = 1: no smaller micro-batch
  oom.oom_request_bytes = int64_t{5} << 20;  // 5 MiB
  const AlternativeSearch search = SearchOomAlternatives(
      context, oom, [&run](const PlanFlags& flags, const PlanFlags&) { return run.Plan(flags); });
  // Only --fused-loss is left (refused); the micro-batch is recorded as not planned.
  REQUIRE(run.asked.size() == 1);
  CHECK(search.planned.empty());
  REQUIRE(search.skipped.size() == 2);
  CHECK(search.skipped[0].reason == "the run's micro-batch is already 1");
  CHECK(search.skipped[1].kinds == std::vector<AlternativeKind>{AlternativeKind::kFusedLoss});
}

TEST_CASE("explain's max_split_size_mb is the OOM request in MiB, above PyTorch's floor of 20",
          "[alternatives]") {
  FakeRun run;
  AlternativeContext context = RunContext();
  context.asked.fused_loss = true;  // tried nothing else but the allocator
  context.asked.recompute = "auto";
  context.asked.precision = "bf16";
  OomRun oom;
  oom.micro_batch = 1;
  oom.oom_request_bytes = int64_t{5} << 20;  // 5 MiB -> 21, PyTorch's smallest accepted value
  SearchOomAlternatives(
      context, oom, [&run](const PlanFlags& flags, const PlanFlags&) { return run.Plan(flags); });
  REQUIRE(run.asked.size() == 2);
  CHECK(run.asked[1].find("--alloc-conf max_split_size_mb:21") != std::string::npos);
}

}  // namespace
}  // namespace memplan
