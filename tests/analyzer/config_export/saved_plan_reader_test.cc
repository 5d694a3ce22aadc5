// The one reader of a saved plan (ReadSavedPlan, analyzer/config_export/saved_plan_reader.h): what
// `memplan export` and `memplan verify --plan` both read from a `memplan analyze --json`
// document. Documents are written here by hand, key by key as docs/json_schema.md names them.

#include <catch2/catch.hpp>

#include <nlohmann/json.hpp>
#include "analyzer/config_export/saved_plan_reader.h"
#include "tests/require_value.h"

namespace memplan {
namespace {

nlohmann::json MinimalPlan() {
  return {{"schema", "memplan/1"},
          {"plan",
           {{"micro_batch", 4},
            {"accumulation_steps", 2},
            {"precision", "bf16"},
            {"optimizer", "adamw"}}}};
}

TEST_CASE("A saved plan's verify fields are read by the one reader", "[export][saved_plan]") {
  nlohmann::json doc = MinimalPlan();
  doc["plan"]["attention"] = {{"requested", "sdpa"}};
  doc["plan"]["loss"] = "mse";
  doc["plan"]["loss_scaling"] = "static";
  doc["plan"]["fp16_ops"] = {"fc1", "fc2"};
  doc["plan"]["fp32_ops"] = {"softmax"};
  doc["plan"]["loss_terms"] = {{{"output", "logits"}, {"loss", "cross_entropy"}},
                               {{"output", "boxes"}, {"loss", "mse"}}};
  doc["bindings"] = {{"batch", 4}, {"seq", 128}};
  const PlanReport plan = testing::RequireValue(ReadSavedPlan(doc));
  CHECK(plan.micro_batch == 4);
  CHECK(plan.accumulation_steps == 2);
  CHECK(plan.precision == Precision::kBf16);
  CHECK(plan.optimizer == OptimizerKind::kAdamW);
  CHECK(plan.attention == AttentionMode::kSdpa);
  CHECK(plan.loss == LossKind::kMse);
  REQUIRE(plan.loss_scaling.has_value());
  CHECK(*plan.loss_scaling == LossScalingMode::kStatic);
  CHECK(plan.fp16_nodes == std::vector<std::string>{"fc1", "fc2"});
  CHECK(plan.fp32_nodes == std::vector<std::string>{"softmax"});
  CHECK(plan.loss_outputs == std::vector<std::string>{"logits", "boxes"});
  CHECK(plan.output_losses == std::vector<LossKind>{LossKind::kCrossEntropy, LossKind::kMse});
  REQUIRE(plan.bindings.size() == 2);
  CHECK(plan.bindings[1].name == "seq");
  CHECK(plan.bindings[1].value == 128);
}

TEST_CASE("Absent saved-plan fields stay absent, each verb says what absence means",
          "[export][saved_plan]") {
  const PlanReport plan = testing::RequireValue(ReadSavedPlan(MinimalPlan()));
  // A plan written before clip_gradients was recorded: the exports clip as the frameworks do by
  // default; verify runs it as analyze plans without --clip-grad (verify_plan_reader.cc).
  CHECK_FALSE(plan.clip_gradients.has_value());
  CHECK(plan.ClipsGradients());
  CHECK_FALSE(plan.loss_scaling.has_value());  // the precision's default
  CHECK_FALSE(plan.amp_mode.has_value());
  CHECK(plan.attention == AttentionMode::kEager);
  CHECK(plan.loss == LossKind::kAuto);
  CHECK(plan.loss_outputs.empty());
}

TEST_CASE("The saved-plan reader names the field, export adds its own context",
          "[export][saved_plan]") {
  nlohmann::json doc = MinimalPlan();
  doc["plan"]["loss_scaling"] = "sometimes";
  const std::string raw = testing::RequireError(ReadSavedPlan(doc));
  CHECK(raw == "'plan.loss_scaling' must be none, static or dynamic, got 'sometimes'");
  const std::string exported = testing::RequireError(ReadExportPlan(doc));
  CHECK(exported.rfind("cannot export this plan: " + raw + " (expected the output of", 0) == 0);
  doc = MinimalPlan();
  doc["plan"].erase("optimizer");  // both verbs now require it (verify once assumed adam)
  CHECK_THAT(testing::RequireError(ReadSavedPlan(doc)), Catch::Contains("'plan.optimizer'"));
}

}  // namespace
}  // namespace memplan
