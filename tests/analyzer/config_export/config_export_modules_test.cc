// memplan export of a module plan (plan.recompute_unit "module", docs/recompute.md): every target
// checkpoints exactly the plan's modules, and HF's gradient_checkpointing (every layer) is exact
// only for a plan of every block; otherwise its export says what it cannot express.

#include <catch2/catch.hpp>

#include <fstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>
#include "analyzer/config_export/export_config.h"
#include "analyzer/config_export/saved_plan_reader.h"
#include "tests/require_value.h"
#include "tests/test_paths.h"

namespace memplan {
namespace {

// resnet18_fp16_plan.json as a module plan: layer3.1 alone checkpointed (its four recomputed
// nodes; the block's bn2, Add and final Relu write what leaves it or are kept), out of the
// network's 8 blocks (layer1.0 ... layer4.1).
nlohmann::json ModulePlan(const std::vector<std::string>& modules, int64_t checkpointable = 8) {
  std::ifstream in(memplan::testing::FixturesDir() + "/plans/resnet18_fp16_plan.json");
  REQUIRE(in.good());
  nlohmann::json plan = nlohmann::json::parse(in);
  plan["plan"]["recompute_unit"] = "module";
  plan["plan"]["recompute_modules"] = modules;
  plan["plan"]["checkpointable_modules"] = checkpointable;
  plan["plan"]["recompute"] = {"/layer3/layer3.1/conv1/Conv",
                               "/layer3/layer3.1/bn1/BatchNormalization",
                               "/layer3/layer3.1/relu/Relu", "/layer3/layer3.1/conv2/Conv"};
  return plan;
}

std::string Export(const nlohmann::json& plan, ExportTarget target) {
  return testing::RequireValue(ExportConfig(plan, target, ExportOptions{}));
}

// The module paths of the exported loop's CHECKPOINTED_MODULES list, in order.
std::vector<std::string> CheckpointedModules(const std::string& loop) {
  const std::string start = "CHECKPOINTED_MODULES = [\n";
  size_t at = loop.find(start);
  REQUIRE(at != std::string::npos);
  at += start.size();
  const size_t end = loop.find("]\n", at);
  REQUIRE(end != std::string::npos);
  std::vector<std::string> paths;
  while (at < end) {
    const size_t open = loop.find('"', at);
    if (open == std::string::npos || open >= end) break;
    const size_t close = loop.find('"', open + 1);
    paths.push_back(loop.substr(open + 1, close - open - 1));
    at = close + 1;
  }
  return paths;
}

TEST_CASE("A module plan's export checkpoints exactly the plan's modules", "[export]") {
  const nlohmann::json plan = ModulePlan({"layer3.1"});
  PlanReport read = ReadExportPlan(plan).value();
  CHECK(read.ModuleUnit());
  CHECK(read.checkpointable_modules == 8);
  REQUIRE(read.checkpoints.modules.size() == 1);
  CHECK(read.checkpoints.modules[0].module_path == "layer3.1");
  CHECK(read.checkpoints.modules[0].nodes.size() == 4);
  CHECK(read.checkpoints.unmapped_nodes.empty());

  CHECK(CheckpointedModules(Export(plan, ExportTarget::kPytorchLoop)) ==
        std::vector<std::string>{"layer3.1"});
  // The comment-only targets list the same module, and only it.
  for (ExportTarget target : {ExportTarget::kLightning, ExportTarget::kAccelerate}) {
    const std::string text = Export(plan, target);
    CHECK(text.find("#   layer3.1\n") != std::string::npos);
    CHECK(text.find("layer4.0") == std::string::npos);
  }
  const nlohmann::json deepspeed = nlohmann::json::parse(Export(plan, ExportTarget::kDeepSpeed));
  const std::string not_expressed = deepspeed["_not_expressed"].dump();
  CHECK(not_expressed.find("in layer3.1;") != std::string::npos);
  CHECK_FALSE(deepspeed.contains("activation_checkpointing"));
}

TEST_CASE("HF gradient_checkpointing is exact only when the plan checkpoints every block",
          "[export]") {
  // A partial plan: the comment says Trainer would checkpoint all 8 blocks, the plan one.
  const std::string partial = Export(ModulePlan({"layer3.1"}), ExportTarget::kHfTrainer);
  CHECK(partial.find("TrainingArguments cannot express the plan's recompute: "
                     "gradient_checkpointing=True\n# checkpoints all 8 blocks") !=
        std::string::npos);
  CHECK(partial.find("#   layer3.1\n") != std::string::npos);

  // Every block: gradient_checkpointing=True is the plan.
  const std::vector<std::string> all = {"layer1.0", "layer1.1", "layer2.0", "layer2.1",
                                        "layer3.0", "layer3.1", "layer4.0", "layer4.1"};
  const std::string every = Export(ModulePlan(all), ExportTarget::kHfTrainer);
  CHECK(every.find("# gradient_checkpointing=True checkpoints every layer, exactly as planned: "
                   "the plan\n# checkpoints all 8 blocks (layer1.0 ... layer4.1).\n") !=
        std::string::npos);
  CHECK(every.find("cannot express") == std::string::npos);
  CHECK(every.find("    gradient_checkpointing=True,\n") != std::string::npos);
  CHECK(CheckpointedModules(Export(ModulePlan(all), ExportTarget::kPytorchLoop)) == all);
}

TEST_CASE("Module plan fields are validated", "[export]") {
  nlohmann::json plan = ModulePlan({"layer3.1"});
  plan["plan"]["recompute_unit"] = "block";
  auto bad_unit = ReadExportPlan(plan);
  REQUIRE_FALSE(bad_unit.ok());
  CHECK(bad_unit.error().message.find(
            "plan.recompute_unit: expected node or module, got 'block'") != std::string::npos);

  plan["plan"]["recompute_unit"] = "node";
  auto modules_without_unit = ReadExportPlan(plan);
  REQUIRE_FALSE(modules_without_unit.ok());
  CHECK(modules_without_unit.error().message.find("plan.recompute_modules is given") !=
        std::string::npos);

  plan = ModulePlan({"layer3.1"}, -1);
  auto negative = ReadExportPlan(plan);
  REQUIRE_FALSE(negative.ok());
  CHECK(negative.error().message.find("plan.checkpointable_modules") != std::string::npos);

  // A plan written before module plans: grouped per node as before, not a module plan.
  nlohmann::json old = ModulePlan({});
  old["plan"].erase("recompute_unit");
  old["plan"].erase("recompute_modules");
  old["plan"].erase("checkpointable_modules");
  PlanReport read = ReadExportPlan(old).value();
  CHECK_FALSE(read.ModuleUnit());
  REQUIRE(read.checkpoints.modules.size() == 1);
  CHECK(read.checkpoints.modules[0].module_path == "layer3.1");
}

TEST_CASE("A reentrant module plan exports use_reentrant=True where a target has the switch",
          "[export]") {
  nlohmann::json plan = ModulePlan({"layer3.1"});
  plan["plan"]["recompute_reentrant"] = true;
  CHECK(ReadExportPlan(plan).value().recompute_reentrant);
  // HF Trainer: gradient_checkpointing_kwargs, in the Python and the JSON.
  CHECK(Export(plan, ExportTarget::kHfTrainer)
            .find("    gradient_checkpointing_kwargs={\"use_reentrant\": True},\n") !=
        std::string::npos);
  const nlohmann::json args = nlohmann::json::parse(Export(plan, ExportTarget::kHfTrainerJson));
  CHECK(args["gradient_checkpointing_kwargs"] == nlohmann::json{{"use_reentrant", true}});
  // The scripts' checkpoint calls.
  CHECK(Export(plan, ExportTarget::kPytorchLoop).find("use_reentrant=True") != std::string::npos);
  CHECK(Export(plan, ExportTarget::kPytorchLoop).find("use_reentrant=False") == std::string::npos);
  // torchtune's activation checkpointing is always NO_REENTRANT: refused in one line.
  const Expected<std::string> torchtune = ExportConfig(plan, ExportTarget::kTorchtune, {});
  REQUIRE_FALSE(torchtune.ok());
  CHECK(torchtune.error().message ==
        "export: torchtune cannot express --recompute-reentrant (its activation checkpointing is "
        "always NO_REENTRANT), which the plan modelled; re-plan without it");
  // Without the key the plan is non-reentrant.
  CHECK_FALSE(ReadExportPlan(ModulePlan({"layer3.1"})).value().recompute_reentrant);
}

}  // namespace
}  // namespace memplan
