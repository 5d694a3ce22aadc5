// A fine-tuning plan (LoRA, a 4-bit base, a paged 8-bit optimizer) survives every export: each
// Python script is read back by tests/export/fine_tune_export_check.py (Debian's python3, syntax
// tree only) for the LoraConfig, BitsAndBytesConfig, optimizer and TrainingArguments values the
// plan holds, and for names used without an import; the DeepSpeed JSON and the Accelerate YAML
// name what the training script must build; hf-trainer-json, which cannot, refuses in one line.
// The expected values are the ones written into the plan below.

#include <catch2/catch.hpp>

#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>

#include <nlohmann/json.hpp>
#include "analyzer/config_export/export_config.h"
#include "analyzer/config_export/saved_plan_reader.h"
#include "tests/test_paths.h"

namespace memplan {
namespace {

constexpr const char* kPython = "/usr/bin/python3";

nlohmann::json LoadPlan(const std::string& name) {
  std::ifstream in(memplan::testing::FixturesDir() + "/plans/" + name);
  REQUIRE(in.good());
  return nlohmann::json::parse(in);
}

// The tiny GPT plan (bf16, m=4 x k=8) as QLoRA: rank 16 on c_attn, an nf4 base, paged AdamW8bit.
nlohmann::json QloraPlan() {
  nlohmann::json plan = LoadPlan("gpt_bf16_plan.json");
  plan["plan"]["optimizer"] = "paged-adamw8bit";
  plan["plan"]["base_dtype"] = "nf4";
  plan["plan"]["lora"] = {{"rank", 16},
                          {"alpha", 16},
                          {"dropout", 0.0},
                          {"target_modules", {"h.0.attn.c_attn", "h.1.attn.c_attn"}},
                          {"peft_target_modules", {"c_attn"}}};
  return plan;
}

std::filesystem::path Scratch(const std::string& file) {
  std::filesystem::path dir = std::filesystem::temp_directory_path() /
                              ("memplan_fine_tune_export_" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  return dir / file;
}

// Runs the checker on `script` with `expect`; its exit status (0: every check held).
int Check(const std::string& script, const nlohmann::json& expect) {
  std::filesystem::path file = Scratch("script.py");
  {
    std::ofstream out(file, std::ios::binary);
    out << script;
  }
  const std::string checker =
      memplan::testing::FixturesDir() + "/../export/fine_tune_export_check.py";
  const std::string expect_file = Scratch("expect.json").string();
  {
    std::ofstream out(expect_file);
    out << expect.dump();
  }
  return std::system((std::string(kPython) + " " + checker + " " + file.string() + " \"$(cat " +
                      expect_file + ")\"")
                         .c_str());
}

const nlohmann::json kLora = {
    {"r", 16}, {"lora_alpha", 16}, {"lora_dropout", 0.0}, {"target_modules", {"c_attn"}}};

TEST_CASE("Every Python export of a QLoRA plan builds its adapters, base and optimizer",
          "[export][finetune]") {
  if (!std::filesystem::exists(kPython)) {
    WARN("skipped: " << kPython << " not found");
    return;
  }
  ExportOptions options;
  options.weight_decay = 0.01;  // AdamW8bit's decay is decoupled: written, not forced to 0
  const nlohmann::json plan = QloraPlan();
  const nlohmann::json script_expect = {{"lora", kLora},
                                        {"quantization", "nf4"},
                                        {"optimizer", "bitsandbytes.optim.PagedAdamW8bit"},
                                        {"calls", {"apply_fine_tuning"}}};
  Expected<std::string> loop = ExportConfig(plan, ExportTarget::kPytorchLoop, options);
  REQUIRE(loop.ok());
  INFO("pytorch:\n" << *loop);
  CHECK(Check(*loop, script_expect) == 0);
  // Lightning's LightningModule is the user's: the export defines apply_fine_tuning for it.
  nlohmann::json lightning_expect = script_expect;
  lightning_expect.erase("calls");
  lightning_expect["defines"] = {"apply_fine_tuning", "make_optimizer"};
  Expected<std::string> lightning = ExportConfig(plan, ExportTarget::kLightning, options);
  REQUIRE(lightning.ok());
  INFO("lightning:\n" << *lightning);
  CHECK(Check(*lightning, lightning_expect) == 0);
  // The same plan on 2 GPUs with DDP: the torchrun script.
  nlohmann::json ddp = plan;
  ddp["plan"]["parallel"] = "ddp";
  ddp["plan"]["gpus"] = 2;
  Expected<std::string> torchrun = ExportConfig(ddp, ExportTarget::kPytorchLoop, options);
  REQUIRE(torchrun.ok());
  INFO("torchrun:\n" << *torchrun);
  CHECK(torchrun->find("DistributedDataParallel") != std::string::npos);
  CHECK(Check(*torchrun, script_expect) == 0);

  Expected<std::string> hf = ExportConfig(plan, ExportTarget::kHfTrainer, options);
  REQUIRE(hf.ok());
  INFO("hf-trainer:\n" << *hf);
  // max_grad_norm 1.0: the plan clips (plan.clip_gradients absent means true) with the default.
  CHECK(Check(*hf, {{"lora", kLora},
                    {"quantization", "nf4"},
                    {"defines", {"apply_fine_tuning"}},
                    {"training_arguments",
                     {{"optim", "paged_adamw_8bit"},
                      {"weight_decay", 0.01},
                      {"max_grad_norm", 1.0},
                      {"per_device_train_batch_size", 4},
                      {"gradient_accumulation_steps", 8},
                      {"bf16", true}}}}) == 0);
}

TEST_CASE("The checker fails on an export that drops the fine-tuning", "[export][finetune]") {
  if (!std::filesystem::exists(kPython)) {
    WARN("skipped: " << kPython << " not found");
    return;
  }
  nlohmann::json full = LoadPlan("gpt_bf16_plan.json");  // no lora, no base_dtype
  Expected<std::string> text = ExportConfig(full, ExportTarget::kPytorchLoop, ExportOptions{});
  REQUIRE(text.ok());
  CHECK(Check(*text, {{"lora", kLora}}) != 0);
  CHECK(Check(*text, {{"quantization", "nf4"}}) != 0);
  // A bitsandbytes optimizer without its import is the NameError the checker reports.
  CHECK(Check("opt = bitsandbytes.optim.AdamW8bit([], lr=1.0)\n",
              {{"optimizer", "bitsandbytes.optim.AdamW8bit"}}) != 0);
  CHECK(Check("import bitsandbytes\nopt = bitsandbytes.optim.AdamW8bit([], lr=1.0)\n",
              {{"optimizer", "bitsandbytes.optim.AdamW8bit"}}) == 0);
}

TEST_CASE("An 8-bit optimizer plan's PyTorch loop imports bitsandbytes", "[export][finetune]") {
  nlohmann::json plan = LoadPlan("gpt_bf16_plan.json");
  plan["plan"]["optimizer"] = "adamw8bit";
  Expected<std::string> text = ExportConfig(plan, ExportTarget::kPytorchLoop, ExportOptions{});
  REQUIRE(text.ok());
  CHECK(text->find("\nimport bitsandbytes\n") != std::string::npos);
  CHECK(text->find("bitsandbytes.optim.AdamW8bit(params") != std::string::npos);
  if (std::filesystem::exists(kPython))
    CHECK(Check(*text, {{"optimizer", "bitsandbytes.optim.AdamW8bit"}}) == 0);
}

TEST_CASE("Configs that go with a script name the adapters and the base it must build",
          "[export][finetune]") {
  const nlohmann::json plan = QloraPlan();
  Expected<std::string> ds = ExportConfig(plan, ExportTarget::kDeepSpeed, ExportOptions{});
  REQUIRE(ds.ok());
  const nlohmann::json config = nlohmann::json::parse(*ds);
  bool named = false;
  for (const auto& note : config["_not_expressed"])
    named |= note.get<std::string>().find(
                 "LoraConfig(r=16, lora_alpha=16, lora_dropout=0.0, target_modules=[\"c_attn\"]") !=
             std::string::npos;
  CHECK(named);
  Expected<std::string> accelerate = ExportConfig(plan, ExportTarget::kAccelerate, ExportOptions{});
  REQUIRE(accelerate.ok());
  CHECK(accelerate->find("# fine-tuning: the plan trains LoRA adapters LoraConfig(r=16") !=
        std::string::npos);
  CHECK(accelerate->find("bnb_4bit_quant_type=\"nf4\"") != std::string::npos);
}

TEST_CASE("A ZeRO config lets DeepSpeed step the bitsandbytes optimizer the script passes",
          "[export][finetune][parallel]") {
  // deepspeed.initialize(optimizer=bitsandbytes.optim.AdamW8bit(...)) under ZeRO asserts "You
  // are using an untested ZeRO Optimizer" unless the config allows it (tools/run_exported_plans.py
  // ran the export without the key: that assertion; with it: 8-bit state on each rank).
  for (const char* optimizer : {"adamw8bit", "paged-adamw8bit", "lion"}) {
    for (const char* stage : {"ddp", "zero1", "zero2", "zero3"}) {
      nlohmann::json plan = LoadPlan("gpt_bf16_plan.json");
      plan["plan"]["optimizer"] = optimizer;
      plan["plan"]["parallel"] = stage;
      plan["plan"]["gpus"] = 2;
      plan["plan"]["amp_mode"] = "master-weights";
      Expected<std::string> ds = ExportConfig(plan, ExportTarget::kDeepSpeed, ExportOptions{});
      REQUIRE(ds.ok());
      const nlohmann::json config = nlohmann::json::parse(*ds);
      INFO(optimizer << " " << stage);
      CHECK_FALSE(config.contains("optimizer"));
      // DDP is stage 0: no ZeRO optimizer, so nothing to allow.
      CHECK(config.value("zero_allow_untested_optimizer", false) == (std::string(stage) != "ddp"));
    }
  }
  nlohmann::json adamw = LoadPlan("gpt_bf16_plan.json");  // a config optimizer DeepSpeed lists
  adamw["plan"]["optimizer"] = "adamw";
  adamw["plan"]["parallel"] = "zero2";
  adamw["plan"]["gpus"] = 2;
  adamw["plan"]["amp_mode"] = "master-weights";
  Expected<std::string> ds = ExportConfig(adamw, ExportTarget::kDeepSpeed, ExportOptions{});
  REQUIRE(ds.ok());
  CHECK_FALSE(nlohmann::json::parse(*ds).contains("zero_allow_untested_optimizer"));
}

TEST_CASE("Accelerate's optimizer lines import bitsandbytes before they use it",
          "[export][finetune]") {
  // tools/run_exported_plans.py runs the file's optimizer lines as written: without the import
  // they raise NameError: name 'bitsandbytes' is not defined.
  nlohmann::json plan = LoadPlan("gpt_bf16_plan.json");
  plan["plan"]["optimizer"] = "paged-adamw8bit";
  Expected<std::string> text = ExportConfig(plan, ExportTarget::kAccelerate, ExportOptions{});
  REQUIRE(text.ok());
  const size_t import = text->find("\n#   import bitsandbytes\n");
  const size_t use = text->find("\n#   optimizer = bitsandbytes.optim.PagedAdamW8bit(");
  REQUIRE(import != std::string::npos);
  REQUIRE(use != std::string::npos);
  CHECK(import < use);
  plan["plan"]["optimizer"] = "adamw";
  text = ExportConfig(plan, ExportTarget::kAccelerate, ExportOptions{});
  REQUIRE(text.ok());
  CHECK(text->find("import bitsandbytes") == std::string::npos);
}

TEST_CASE("hf-trainer-json refuses a LoRA plan in one line", "[export][finetune]") {
  Expected<std::string> json = ExportConfig(QloraPlan(), ExportTarget::kHfTrainerJson, {});
  REQUIRE_FALSE(json.ok());
  CHECK(json.error().message ==
        "export: hf-trainer-json (TrainingArguments fields only) cannot express --lora 16 "
        "(PEFT's LoraConfig), which the plan modelled; export with --to hf-trainer, pytorch or "
        "lightning, whose scripts build it");
}

TEST_CASE("A ZeRO plan is refused by the PyTorch target in one line", "[export][parallel]") {
  for (const char* stage : {"zero1", "zero2", "zero3"}) {
    nlohmann::json plan = LoadPlan("gpt_bf16_plan.json");
    plan["plan"]["parallel"] = stage;
    plan["plan"]["gpus"] = 8;
    plan["plan"]["amp_mode"] = "master-weights";
    Expected<std::string> text = ExportConfig(plan, ExportTarget::kPytorchLoop, ExportOptions{});
    REQUIRE_FALSE(text.ok());
    INFO(text.error().message);
    CHECK(text.error().message.find('\n') == std::string::npos);
    CHECK_THAT(text.error().message,
               Catch::StartsWith("export: pytorch (a single-GPU loop, or a torchrun script for "
                                 "ddp and fsdp) cannot express --parallel " +
                                 std::string(stage)));
    CHECK_THAT(text.error().message, Catch::Contains("--to deepspeed"));
    CHECK(ExportConfig(plan, ExportTarget::kDeepSpeed, ExportOptions{}).ok());
  }
}

TEST_CASE("The FSDP2 script refuses a bitsandbytes optimizer in one line", "[export][parallel]") {
  // tools/run_exported_plans.py ran it: torch has no DTensor sharding rule for
  // bitsandbytes.optimizer_update_32bit, so the first step raises.
  nlohmann::json plan = LoadPlan("gpt_bf16_plan.json");
  plan["plan"]["parallel"] = "fsdp";
  plan["plan"]["gpus"] = 2;
  plan["plan"]["optimizer"] = "adamw8bit";
  Expected<std::string> text = ExportConfig(plan, ExportTarget::kPytorchLoop, ExportOptions{});
  REQUIRE_FALSE(text.ok());
  CHECK(text.error().message ==
        "export: pytorch's FSDP2 script cannot run --optimizer adamw8bit (bitsandbytes steps "
        "plain tensors, not FSDP2's DTensor shards), which the plan modelled; re-plan with "
        "--parallel ddp, or with --optimizer adamw");
  plan["plan"]["parallel"] = "ddp";  // DDP steps whole tensors: the script is written
  CHECK(ExportConfig(plan, ExportTarget::kPytorchLoop, ExportOptions{}).ok());
}

TEST_CASE("plan.lora and plan.base_dtype read back, bad values name the key",
          "[export][finetune]") {
  Expected<PlanReport> plan = ReadExportPlan(QloraPlan());
  REQUIRE(plan.ok());
  REQUIRE(plan->lora.has_value());
  CHECK(plan->lora->rank == 16);
  CHECK(plan->lora->target_modules.size() == 2);
  CHECK(plan->base_dtype == BaseDType::kNf4);
  CHECK(plan->QuantizedBase());

  nlohmann::json bad = QloraPlan();
  bad["plan"]["lora"]["rank"] = 0;
  Expected<PlanReport> read = ReadExportPlan(bad);
  REQUIRE_FALSE(read.ok());
  CHECK_THAT(read.error().message, Catch::Contains("plan.lora.rank"));
  bad = QloraPlan();
  bad["plan"]["base_dtype"] = "nf3";
  read = ReadExportPlan(bad);
  REQUIRE_FALSE(read.ok());
  CHECK_THAT(read.error().message, Catch::Contains("plan.base_dtype"));
}

}  // namespace
}  // namespace memplan
