// The alternatives block of the text report and its JSON (analyzer/alternatives/
// alternatives_report.h), for a hand-made search.

#include <catch2/catch.hpp>

#include "analyzer/alternatives/alternatives_report.h"

namespace memplan {
namespace {

AlternativesReport Made() {
  AlternativesReport report;
  report.asked.gpu = "24G";
  report.asked.recompute = "none";
  Alternative qlora;
  qlora.kinds = {AlternativeKind::kQlora, AlternativeKind::kRecompute};
  qlora.change.lora = 16;
  qlora.change.base_dtype = "nf4";
  qlora.change.recompute = "auto";
  qlora.plan.fits = true;
  qlora.plan.gpu = "generic 24.0 GiB";
  qlora.plan.budget_bytes = int64_t{47} << 29;  // 23.5 GiB
  qlora.plan.chosen.micro_batch = 2;
  qlora.plan.chosen.accumulation_steps = 4;
  qlora.plan.chosen.global_batch = 8;
  qlora.plan.chosen.precision = Precision::kFp16;
  qlora.plan.chosen.recompute = RecomputeLabel::kOptimal;
  qlora.plan.chosen.peak_bytes = int64_t{31} << 29;  // 15.5 GiB
  qlora.plan.chosen.step_seconds = 12.5;
  qlora.plan.chosen.samples_per_second = 0.64;  // 8 / 12.5
  Alternative sharded;
  sharded.kinds = {AlternativeKind::kSharding};
  sharded.change.gpus = 8;
  sharded.change.parallel = "zero3";
  sharded.plan.fits = false;
  sharded.plan.gpus = 8;
  sharded.plan.budget_bytes = int64_t{47} << 29;
  sharded.plan.chosen.micro_batch = 1;
  sharded.plan.chosen.peak_bytes = int64_t{50} << 30;
  report.search.planned = {qlora, sharded};
  report.search.skipped.push_back(
      {{AlternativeKind::kLargerGpu}, PlanFlags{}, "no GPU in memplan's table has enough memory"});
  return report;
}

TEST_CASE("alternatives text: fitting plans ranked, the rest one line each", "[alternatives]") {
  CHECK(AlternativesText(Made()) ==
        "Alternatives that fit (ranked: on this GPU by samples/s, then a shorter sequence, more "
        "GPUs, a larger GPU)\n"
        "  1. --recompute auto --lora 16 --base-dtype nf4 (in place of --recompute none)\n"
        "     m=2 x 4 accumulation steps, peak 15.5 GiB of 23.5 GiB, 12.5000 s/step, 0.64 "
        "samples/s, fp16, recompute optimal\n"
        "  does not fit: --gpus 8 --parallel zero3 (peak 50.0 GiB of 23.5 GiB)\n"
        "  not planned: gpu: no GPU in memplan's table has enough memory\n");
}

TEST_CASE("alternatives JSON: the change, what it replaces, the whole request", "[alternatives]") {
  const AlternativesReport report = Made();
  const nlohmann::ordered_json j = AlternativesJson(report);
  REQUIRE(j.size() == 2);
  CHECK(j[0]["kinds"] == nlohmann::ordered_json::array({"qlora", "recompute"}));
  CHECK(j[0]["flags"] == "--recompute auto --lora 16 --base-dtype nf4");
  CHECK(j[0]["replaces"] == "--recompute none");
  CHECK(j[0]["arguments"] == "--gpu 24G --recompute auto --lora 16 --base-dtype nf4");
  CHECK(j[0]["global_batch"] == 8);
  CHECK(j[0]["peak_bytes"] == int64_t{16642998272});  // 15.5 x 2^30
  CHECK_FALSE(j[1].contains("replaces"));             // --gpus and --parallel were not asked
  CHECK(j[1]["gpus"] == 8);
  const nlohmann::ordered_json skipped = AlternativesNotPlannedJson(report);
  REQUIRE(skipped.size() == 1);
  CHECK(skipped[0]["kinds"] == nlohmann::ordered_json::array({"gpu"}));
  CHECK(skipped[0]["flags"] == "");
}

}  // namespace
}  // namespace memplan
