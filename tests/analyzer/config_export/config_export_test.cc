// memplan export: exact values of every target for the hand-written plans in
// tests/fixtures/plans/ (resnet18 fp16 8x4, tiny GPT bf16 4x8, MLP fp32 16x1).

#include <catch2/catch.hpp>

#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <string>

#include <nlohmann/json.hpp>
#include "analyzer/config_export/export_config.h"
#include "analyzer/config_export/saved_plan_reader.h"
#include "analyzer/recompute/checkpoint_modules.h"
#include "tests/require_value.h"
#include "tests/test_paths.h"

namespace memplan {
namespace {

nlohmann::json LoadPlan(const std::string& name) {
  std::ifstream in(memplan::testing::FixturesDir() + "/plans/" + name);
  REQUIRE(in.good());
  return nlohmann::json::parse(in);
}

std::string Export(const nlohmann::json& plan, ExportTarget target,
                   const ExportOptions& options = {}) {
  return testing::RequireValue(ExportConfig(plan, target, options));
}

std::string FirstLine(const std::string& text) { return text.substr(0, text.find('\n')); }

size_t CountOf(const std::string& text, const std::string& needle) {
  size_t count = 0;
  for (size_t at = text.find(needle); at != std::string::npos; at = text.find(needle, at + 1))
    ++count;
  return count;
}

// The non-comment lines of a flat YAML mapping as key -> raw value text. Fails the test on any
// line that is not `key: value` or on a repeated key: the accelerate output must be exactly a
// flat mapping (python3-yaml is not available everywhere CI runs, so structure is checked here;
// export_syntax_test.cc parses it with PyYAML where installed).
std::map<std::string, std::string> FlatYaml(const std::string& text) {
  std::map<std::string, std::string> entries;
  std::istringstream lines(text);
  std::string line;
  while (std::getline(lines, line)) {
    if (line.empty() || line[0] == '#') continue;
    size_t colon = line.find(": ");
    INFO("YAML line: " << line);
    REQUIRE(colon != std::string::npos);
    std::string key = line.substr(0, colon);
    REQUIRE(key.find_first_of(" \t'\"") == std::string::npos);
    REQUIRE(entries.count(key) == 0);
    entries[key] = line.substr(colon + 2);
  }
  return entries;
}

TEST_CASE("ONNX node names map to the PyTorch modules to checkpoint", "[export]") {
  // Expected module paths were checked against named_modules() of torchvision's resnet18 and of
  // TinyGPT / TransformerModel in tests/fixtures/make_torch_fixtures.py (all exist).
  CHECK(ModuleScopesOfNode("/layer3/layer3.1/conv1/Conv") ==
        std::vector<std::string>{"layer3", "layer3.1", "layer3.1.conv1"});
  CHECK(CheckpointModuleForNode("/layer3/layer3.1/conv1/Conv") == "layer3.1");
  CHECK(CheckpointModuleForNode("/layer4/layer4.0/downsample/downsample.0/Conv") == "layer4.0");
  CHECK(ModuleScopesOfNode("/layer4/layer4.0/downsample/downsample.0/Conv").back() ==
        "layer4.0.downsample.0");
  CHECK(CheckpointModuleForNode("/blocks/blocks.0/mlp/mlp.0/MatMul") == "blocks.0");
  // nn.TransformerEncoder iterates its ModuleList, so "layers.0" is relative to "encoder".
  CHECK(CheckpointModuleForNode("/encoder/layers.1/self_attn/MatMul") == "encoder.layers.1");
  // A ModuleList iterated at the top level: already-qualified segments.
  CHECK(CheckpointModuleForNode("/blocks.0/blocks.0.1/Relu") == "blocks.0");
  // No indexed scope: the deepest module.
  CHECK(CheckpointModuleForNode("/encoder/attn/MatMul") == "encoder.attn");
  CHECK(CheckpointModuleForNode("/fc/Gemm") == "fc");
  // Not the exporter's scoped form: no module.
  CHECK_FALSE(CheckpointModuleForNode("/Flatten").has_value());
  CHECK_FALSE(CheckpointModuleForNode("Relu_3").has_value());
  CHECK_FALSE(CheckpointModuleForNode("").has_value());
  CHECK_FALSE(CheckpointModuleForNode("//Conv").has_value());

  CheckpointModules grouped =
      GroupRecomputeByModule({"/layer3/layer3.1/conv1/Conv", "/Cast", "/layer4/layer4.0/conv1/Conv",
                              "/layer3/layer3.1/relu/Relu"});
  REQUIRE(grouped.modules.size() == 2);
  CHECK(grouped.modules[0].module_path == "layer3.1");
  CHECK(grouped.modules[0].nodes ==
        std::vector<std::string>{"/layer3/layer3.1/conv1/Conv", "/layer3/layer3.1/relu/Relu"});
  CHECK(grouped.modules[1].module_path == "layer4.0");
  CHECK(grouped.unmapped_nodes == std::vector<std::string>{"/Cast"});
  CHECK(grouped.SegmentCount() == 3);
}

// The hyper-parameters a test passes where it checks how they are written (the plan decides
// none of them).
ExportOptions WithHyperParameters() {
  ExportOptions options;
  options.learning_rate = 0.001;
  options.weight_decay = 0.01;
  options.sgd_momentum = 0.9;
  return options;
}

TEST_CASE("DeepSpeed config for an fp16 plan with recompute", "[export]") {
  nlohmann::json ds = nlohmann::json::parse(
      Export(LoadPlan("resnet18_fp16_plan.json"), ExportTarget::kDeepSpeed, WithHyperParameters()));
  // DeepSpeed asserts train_batch_size == micro * accumulation * GPUs: 8 * 4 * 1 = 32.
  CHECK(ds["train_batch_size"] == 32);
  CHECK(ds["train_micro_batch_size_per_gpu"] == 8);
  CHECK(ds["gradient_accumulation_steps"] == 4);
  CHECK(ds["gradient_clipping"] == 1.0);
  CHECK(ds["fp16"] == nlohmann::json::parse(R"({"enabled": true, "loss_scale": 0,
      "initial_scale_power": 16, "loss_scale_window": 1000, "hysteresis": 2,
      "min_loss_scale": 1})"));
  CHECK_FALSE(ds.contains("bf16"));
  // Recompute nodes fall in two blocks, layer3.1 and layer4.0. A DeepSpeed config cannot make the
  // model recompute them: no activation_checkpointing section pretends to, and the config says
  // what the model must do.
  CHECK_FALSE(ds.contains("activation_checkpointing"));
  REQUIRE(ds["_not_expressed"].size() == 1);
  CHECK_THAT(ds["_not_expressed"][0].get<std::string>(),
             Catch::StartsWith("recompute: the plan recomputes 6 nodes in layer3.1, layer4.0; a "
                               "DeepSpeed config cannot make the model recompute them.") &&
                 Catch::Contains("memplan export PLAN.json --to pytorch"));
  CHECK(ds["optimizer"] == nlohmann::json::parse(R"({"type": "AdamW", "params": {"lr": 0.001,
      "betas": [0.9, 0.999], "eps": 1e-8, "weight_decay": 0.01}})"));
  CHECK(ds["_comment"].get<std::string>().rfind(
            "Generated by memplan from model 'tests/fixtures/resnet18_opset13.onnx'", 0) == 0);
  // Only keys from DeepSpeed's config reference (plus the ignored comment).
  const std::set<std::string> documented = {"_comment",
                                            "_not_expressed",
                                            "train_batch_size",
                                            "train_micro_batch_size_per_gpu",
                                            "gradient_accumulation_steps",
                                            "gradient_clipping",
                                            "optimizer",
                                            "fp16",
                                            "bf16"};
  for (const auto& [key, value] : ds.items()) CHECK(documented.count(key) == 1);
}

TEST_CASE("DeepSpeed config for bf16 Adam and for fp32 SGD", "[export]") {
  nlohmann::json gpt =
      nlohmann::json::parse(Export(LoadPlan("gpt_bf16_plan.json"), ExportTarget::kDeepSpeed));
  CHECK(gpt["train_batch_size"] == 32);  // 4 * 8 * 1
  CHECK(gpt["train_micro_batch_size_per_gpu"] == 4);
  CHECK(gpt["gradient_accumulation_steps"] == 8);
  CHECK(gpt["bf16"] == nlohmann::json::parse(R"({"enabled": true})"));
  CHECK_FALSE(gpt.contains("fp16"));
  // blocks.0, blocks.1, and "/Cast" (no module scope).
  CHECK_THAT(gpt["_not_expressed"][0].get<std::string>(),
             Catch::StartsWith("recompute: the plan recomputes 5 nodes in blocks.0, blocks.1, "
                               "node /Cast;"));
  // Plain Adam: weight decay 0 (DeepSpeed's Adam runs in AdamW mode, identical at 0 decay).
  CHECK(gpt["optimizer"]["type"] == "Adam");
  CHECK(gpt["optimizer"]["params"]["weight_decay"] == 0.0);

  ExportOptions options = WithHyperParameters();
  options.max_grad_norm = 0;
  options.learning_rate = 0.1;
  nlohmann::json mlp = nlohmann::json::parse(
      Export(LoadPlan("mlp_fp32_sgd_plan.json"), ExportTarget::kDeepSpeed, options));
  CHECK(mlp["train_batch_size"] == 16);  // 16 * 1 * 1
  CHECK(mlp["gradient_accumulation_steps"] == 1);
  CHECK(mlp["gradient_clipping"] == 0.0);
  CHECK_FALSE(mlp.contains("fp16"));
  CHECK_FALSE(mlp.contains("bf16"));
  CHECK_FALSE(mlp.contains("activation_checkpointing"));
  CHECK(mlp["optimizer"] ==
        nlohmann::json::parse(R"({"type": "SGD", "params": {"lr": 0.1, "momentum": 0.9}})"));
}

TEST_CASE("Hugging Face TrainingArguments as JSON and as Python", "[export]") {
  nlohmann::json plan = LoadPlan("resnet18_fp16_plan.json");
  nlohmann::json args =
      nlohmann::json::parse(Export(plan, ExportTarget::kHfTrainerJson, WithHyperParameters()));
  CHECK(args == nlohmann::json::parse(R"({
      "output_dir": "memplan-output",
      "per_device_train_batch_size": 8,
      "gradient_accumulation_steps": 4,
      "fp16": true,
      "bf16": false,
      "gradient_checkpointing": true,
      "gradient_checkpointing_kwargs": {"use_reentrant": false},
      "max_grad_norm": 1.0,
      "optim": "adamw_torch",
      "learning_rate": 0.001,
      "weight_decay": 0.01,
      "adam_beta1": 0.9,
      "adam_beta2": 0.999,
      "adam_epsilon": 1e-8,
      "dataloader_num_workers": 4,
      "dataloader_pin_memory": true})"));

  std::string py = Export(plan, ExportTarget::kHfTrainer);
  CHECK(FirstLine(py).rfind("# Generated by memplan from model", 0) == 0);
  CHECK(py.find("from transformers import TrainingArguments\n\nargs = TrainingArguments(\n") !=
        std::string::npos);
  CHECK(py.find("    per_device_train_batch_size=8,\n") != std::string::npos);
  CHECK(py.find("    gradient_accumulation_steps=4,\n") != std::string::npos);
  CHECK(py.find("    fp16=True,\n    bf16=False,\n") != std::string::npos);
  CHECK(py.find("    gradient_checkpointing=True,\n") != std::string::npos);
  // The checkpoint the plan modelled (non-reentrant), whatever transformers' default.
  CHECK(py.find("    gradient_checkpointing_kwargs={\"use_reentrant\": False},\n") !=
        std::string::npos);
  CHECK(py.find("    max_grad_norm=1.0,\n") != std::string::npos);
  CHECK(py.find("    optim=\"adamw_torch\",\n") != std::string::npos);
  CHECK(py.find("#   layer3.1\n#   layer4.0\n") != std::string::npos);

  nlohmann::json gpt =
      nlohmann::json::parse(Export(LoadPlan("gpt_bf16_plan.json"), ExportTarget::kHfTrainerJson));
  CHECK(gpt["fp16"] == false);
  CHECK(gpt["bf16"] == true);
  CHECK(gpt["per_device_train_batch_size"] == 4);
  CHECK(gpt["gradient_accumulation_steps"] == 8);
  CHECK(gpt["weight_decay"] == 0.0);  // plain Adam

  nlohmann::json mlp = nlohmann::json::parse(
      Export(LoadPlan("mlp_fp32_sgd_plan.json"), ExportTarget::kHfTrainerJson));
  CHECK(mlp["optim"] == "sgd");
  CHECK(mlp["gradient_checkpointing"] == false);
  CHECK_FALSE(mlp.contains("adam_beta1"));
}

TEST_CASE("Accelerate config is a flat YAML mapping of accelerate's keys", "[export]") {
  std::string yaml = Export(LoadPlan("resnet18_fp16_plan.json"), ExportTarget::kAccelerate);
  CHECK(FirstLine(yaml).rfind("# Generated by memplan from model", 0) == 0);
  std::map<std::string, std::string> expected = {
      {"compute_environment", "LOCAL_MACHINE"},
      {"distributed_type", "'NO'"},  // unquoted NO is the boolean false in YAML 1.1
      {"machine_rank", "0"},
      {"mixed_precision", "fp16"},
      {"num_machines", "1"},
      {"num_processes", "1"},
      {"use_cpu", "false"}};
  CHECK(FlatYaml(yaml) == expected);
  // Accumulation is stated where accelerate reads it, not as a (rejected) top-level key.
  CHECK(yaml.find("Accelerator(gradient_accumulation_steps=4)") != std::string::npos);
  CHECK(yaml.find("ACCELERATE_GRADIENT_ACCUMULATION_STEPS=4") != std::string::npos);

  CHECK(FlatYaml(Export(LoadPlan("gpt_bf16_plan.json"), ExportTarget::kAccelerate))
            .at("mixed_precision") == "bf16");
  CHECK(FlatYaml(Export(LoadPlan("mlp_fp32_sgd_plan.json"), ExportTarget::kAccelerate))
            .at("mixed_precision") == "'no'");
}

TEST_CASE("Lightning Trainer arguments", "[export]") {
  std::string fp16 = Export(LoadPlan("resnet18_fp16_plan.json"), ExportTarget::kLightning);
  CHECK(FirstLine(fp16).rfind("# Generated by memplan from model", 0) == 0);
  CHECK(fp16.find("    precision=\"16-mixed\",\n") != std::string::npos);
  CHECK(fp16.find("    accumulate_grad_batches=4,\n") != std::string::npos);
  CHECK(fp16.find("    gradient_clip_val=1.0,\n") != std::string::npos);
  CHECK(fp16.find("MICRO_BATCH = 8\n") != std::string::npos);
  CHECK(Export(LoadPlan("gpt_bf16_plan.json"), ExportTarget::kLightning)
            .find("    precision=\"bf16-mixed\",\n") != std::string::npos);
  ExportOptions no_clip;
  no_clip.max_grad_norm = 0;
  std::string fp32 = Export(LoadPlan("mlp_fp32_sgd_plan.json"), ExportTarget::kLightning, no_clip);
  CHECK(fp32.find("    precision=\"32-true\",\n") != std::string::npos);
  CHECK(fp32.find("    gradient_clip_val=None,\n") != std::string::npos);
}

TEST_CASE("PyTorch loop for fp16: scaler, unscale before clip, clip after the k-th micro-batch",
          "[export]") {
  std::string py = Export(LoadPlan("resnet18_fp16_plan.json"), ExportTarget::kPytorchLoop,
                          WithHyperParameters());
  CHECK(FirstLine(py).rfind("# Generated by memplan from model", 0) == 0);
  CHECK(py.find("MICRO_BATCH = 8\n") != std::string::npos);
  CHECK(py.find("ACCUMULATION_STEPS = 4  # one optimizer step per 32 samples\n") !=
        std::string::npos);
  CHECK(py.find("CHECKPOINTED_MODULES = [\n    \"layer3.1\",\n    \"layer4.0\",\n]\n") !=
        std::string::npos);
  CHECK(py.find("torch.utils.checkpoint") != std::string::npos);
  // Autocast on the device train() was given, not always CUDA.
  CHECK(
      py.find("with torch.autocast(device_type=torch.device(device).type, dtype=torch.float16):") !=
      std::string::npos);
  CHECK(py.find("loss = loss_fn(model(inputs), targets) / ACCUMULATION_STEPS") !=
        std::string::npos);
  // torch.amp.GradScaler scales on any device train() is given (the CPU too, torch >= 2.3);
  // older torch falls back to the CUDA-only spelling.
  CHECK(py.find("    if hasattr(torch.amp, \"GradScaler\"):\n"
                "        scaler = torch.amp.GradScaler(torch.device(device).type)\n") !=
        std::string::npos);
  CHECK(py.find("num_workers=4, pin_memory=True") != std::string::npos);
  CHECK(py.find("DataLoader(dataset, batch_size=MICRO_BATCH,") != std::string::npos);
  CHECK(py.find("LEARNING_RATE = 0.001\nWEIGHT_DECAY = 0.01\n") != std::string::npos);
  CHECK(py.find("torch.optim.AdamW(params, lr=LEARNING_RATE, betas=(0.9, 0.999), eps=1e-08, "
                "weight_decay=WEIGHT_DECAY)") != std::string::npos);
  // Order inside the loop: backward, skip until the k-th micro-batch, unscale, clip, step,
  // update, scheduler, zero_grad.
  size_t backward = py.find("scaler.scale(loss).backward()");
  size_t skip = py.find("if (index + 1) % ACCUMULATION_STEPS != 0:");
  size_t unscale = py.find("scaler.unscale_(optimizer)");
  size_t clip = py.find("torch.nn.utils.clip_grad_norm_(model.parameters(), MAX_GRAD_NORM)");
  size_t step = py.find("scaler.step(optimizer)");
  size_t update = py.find("scaler.update()");
  size_t scheduler = py.find("scheduler.step()");
  size_t zero = py.find("optimizer.zero_grad(set_to_none=True)", skip);
  REQUIRE(backward != std::string::npos);
  CHECK(backward < skip);
  CHECK(skip < unscale);
  CHECK(unscale < clip);
  CHECK(clip < step);
  CHECK(step < update);
  CHECK(update < scheduler);
  CHECK(scheduler < zero);
  CHECK(zero != std::string::npos);
  CHECK(CountOf(py, "scheduler.step()") == 1);
  CHECK(CountOf(py, "clip_grad_norm_") == 1);
}

TEST_CASE("PyTorch loop for bf16 and fp32 has no scaler", "[export]") {
  std::string bf16 = Export(LoadPlan("gpt_bf16_plan.json"), ExportTarget::kPytorchLoop);
  CHECK(bf16.find("dtype=torch.bfloat16") != std::string::npos);
  CHECK(bf16.find("GradScaler") == std::string::npos);
  CHECK(bf16.find("unscale_") == std::string::npos);
  CHECK(bf16.find("        loss.backward()\n") != std::string::npos);
  CHECK(bf16.find("        optimizer.step()\n") != std::string::npos);
  CHECK(bf16.find("optimizer.zero_grad(set_to_none=False)") != std::string::npos);  // zero_grad
  CHECK(bf16.find("CHECKPOINTED_MODULES = [\n    \"blocks.0\",\n    \"blocks.1\",\n]\n") !=
        std::string::npos);
  CHECK(bf16.find(
            "# Recomputed nodes without a module scope (wrap their code by hand):\n#   /Cast\n") !=
        std::string::npos);
  // Plain Adam: torch's Adam has no decay by default, as the plan simulated.
  CHECK(bf16.find("torch.optim.Adam(params, lr=LEARNING_RATE, betas=(0.9, 0.999), eps=1e-08)") !=
        std::string::npos);

  std::string fp32 =
      Export(LoadPlan("mlp_fp32_sgd_plan.json"), ExportTarget::kPytorchLoop, WithHyperParameters());
  CHECK(fp32.find("autocast") == std::string::npos);
  CHECK(fp32.find("GradScaler") == std::string::npos);
  CHECK(fp32.find("CHECKPOINTED_MODULES = []\n") != std::string::npos);
  CHECK(fp32.find("SGD_MOMENTUM = 0.9\n") != std::string::npos);
  CHECK(fp32.find("torch.optim.SGD(params, lr=LEARNING_RATE, momentum=SGD_MOMENTUM)") !=
        std::string::npos);
  CHECK(fp32.find("ACCUMULATION_STEPS = 1  # one optimizer step per 16 samples\n") !=
        std::string::npos);
}

TEST_CASE("A plan simulated without clipping exports without clipping", "[export]") {
  // mlp_fp32_sgd_plan.json has "clip_gradients": false; the default options ask for 1.0.
  nlohmann::json plan = LoadPlan("mlp_fp32_sgd_plan.json");
  std::string py = Export(plan, ExportTarget::kPytorchLoop);
  CHECK(py.find("clip_grad_norm_") == std::string::npos);
  CHECK(py.find("MAX_GRAD_NORM") == std::string::npos);
  CHECK(nlohmann::json::parse(Export(plan, ExportTarget::kDeepSpeed))["gradient_clipping"] == 0.0);
  CHECK(nlohmann::json::parse(Export(plan, ExportTarget::kHfTrainerJson))["max_grad_norm"] == 0.0);
  CHECK(Export(plan, ExportTarget::kLightning).find("gradient_clip_val=None") != std::string::npos);
  plan["plan"]["clip_gradients"] = "yes";
  CHECK_FALSE(ExportConfig(plan, ExportTarget::kPytorchLoop, {}).ok());
}

TEST_CASE("Adafactor plans", "[export]") {
  nlohmann::json plan = LoadPlan("gpt_bf16_plan.json");
  plan["plan"]["optimizer"] = "adafactor";
  nlohmann::json ds =
      nlohmann::json::parse(Export(plan, ExportTarget::kDeepSpeed, WithHyperParameters()));
  CHECK(ds["optimizer"] ==
        nlohmann::json::parse(R"({"type": "Adafactor", "params": {"lr": 0.001}})"));
  nlohmann::json hf = nlohmann::json::parse(Export(plan, ExportTarget::kHfTrainerJson));
  CHECK(hf["optim"] == "adafactor");
  CHECK(hf["weight_decay"] == 0.0);
  CHECK_FALSE(hf.contains("adam_beta1"));
  CHECK(Export(plan, ExportTarget::kPytorchLoop)
            .find("    return torch.optim.Adafactor(params, lr=LEARNING_RATE)\n") !=
        std::string::npos);
}

TEST_CASE("plan.optimizer_impl: the constructor keyword, HF's optim, the refusals", "[export]") {
  // gpt_bf16_plan.json plans Adam; a plan written before plan.optimizer_impl gets no keyword.
  nlohmann::json plan = LoadPlan("gpt_bf16_plan.json");
  const std::string old = Export(plan, ExportTarget::kPytorchLoop);
  CHECK(old.find("eps=1e-08)\n") != std::string::npos);
  CHECK(old.find("foreach=") == std::string::npos);
  CHECK(old.find("fused=") == std::string::npos);
  plan["plan"]["optimizer_impl"] = "foreach";
  CHECK(Export(plan, ExportTarget::kPytorchLoop).find("eps=1e-08, foreach=True)\n") !=
        std::string::npos);
  CHECK(Export(plan, ExportTarget::kLightning).find("eps=1e-08, foreach=True)\n") !=
        std::string::npos);
  CHECK(nlohmann::json::parse(Export(plan, ExportTarget::kHfTrainerJson))["optim"] ==
        "adamw_torch");
  // DeepSpeed builds FusedAdam, which holds less than the foreach plan counted: exported, and
  // the config says the plan over-estimates it.
  const nlohmann::json ds = nlohmann::json::parse(Export(plan, ExportTarget::kDeepSpeed));
  bool noted = false;
  for (const auto& note : ds["_not_expressed"])
    noted =
        noted || note.get<std::string>().find("torch.optim's foreach Adam") != std::string::npos;
  CHECK(noted);
  plan["plan"]["optimizer_impl"] = "fused";
  CHECK(Export(plan, ExportTarget::kPytorchLoop).find("eps=1e-08, fused=True)\n") !=
        std::string::npos);
  CHECK(nlohmann::json::parse(Export(plan, ExportTarget::kHfTrainerJson))["optim"] ==
        "adamw_torch_fused");
  const nlohmann::json fused_ds = nlohmann::json::parse(Export(plan, ExportTarget::kDeepSpeed));
  CHECK(fused_ds["optimizer"]["type"] == "Adam");
  for (const auto& note : fused_ds["_not_expressed"])
    CHECK(note.get<std::string>().find("FusedAdam") == std::string::npos);
  plan["plan"]["optimizer_impl"] = "for-loop";
  CHECK(Export(plan, ExportTarget::kPytorchLoop).find("eps=1e-08, foreach=False)\n") !=
        std::string::npos);
  Expected<std::string> hf = ExportConfig(plan, ExportTarget::kHfTrainerJson, {});
  REQUIRE_FALSE(hf.ok());
  CHECK(hf.error().message ==
        "export: hf-trainer-json (TrainingArguments.optim has adamw_torch and adamw_torch_fused) "
        "cannot express --optimizer-impl for-loop, which the plan modelled; re-plan with "
        "--optimizer-impl foreach or fused");
  // DeepSpeed runs its FusedAdam, which a for-loop plan over-estimates: accepted.
  CHECK(ExportConfig(plan, ExportTarget::kDeepSpeed, {}).ok());
  plan["plan"]["optimizer_impl"] = "single";
  Expected<std::string> bad = ExportConfig(plan, ExportTarget::kPytorchLoop, {});
  REQUIRE_FALSE(bad.ok());
  CHECK_THAT(bad.error().message,
             Catch::Contains("plan.optimizer_impl: unknown optimizer implementation 'single'"));
  // SGD's implementations differ in memory only with weight decay, which plans do not model:
  // DeepSpeed takes a foreach SGD plan.
  nlohmann::json sgd = LoadPlan("mlp_fp32_sgd_plan.json");
  sgd["plan"]["optimizer_impl"] = "foreach";
  CHECK(ExportConfig(sgd, ExportTarget::kDeepSpeed, {}).ok());
}

TEST_CASE("Hyper-parameters the plan does not decide are never invented", "[export]") {
  // Default options: no learning rate, weight decay or momentum given.
  nlohmann::json resnet = LoadPlan("resnet18_fp16_plan.json");  // adamw, clips
  nlohmann::json ds = nlohmann::json::parse(Export(resnet, ExportTarget::kDeepSpeed));
  CHECK(ds["optimizer"] == nlohmann::json::parse(R"({"type": "AdamW", "params": {
      "betas": [0.9, 0.999], "eps": 1e-8}})"));
  CHECK_THAT(ds["_not_expressed"][1].get<std::string>(),
             Catch::StartsWith("optimizer.params.lr: yours to set"));
  nlohmann::json hf = nlohmann::json::parse(Export(resnet, ExportTarget::kHfTrainerJson));
  CHECK_FALSE(hf.contains("learning_rate"));
  CHECK_FALSE(hf.contains("weight_decay"));
  std::string hf_py = Export(resnet, ExportTarget::kHfTrainer);
  CHECK(hf_py.find("# learning_rate is yours to set") != std::string::npos);
  CHECK(hf_py.find("# weight_decay is yours to set") != std::string::npos);
  CHECK(hf_py.find("learning_rate=") == std::string::npos);

  std::string py = Export(resnet, ExportTarget::kPytorchLoop);
  CHECK(py.find("\nLEARNING_RATE = None  # yours to set (--lr X)") != std::string::npos);
  CHECK(py.find("\nWEIGHT_DECAY = None  # yours to set (--weight-decay X)") != std::string::npos);
  // Without a weight decay, AdamW's keyword is left out: torch's default, not memplan's.
  CHECK(py.find("torch.optim.AdamW(params, lr=LEARNING_RATE, betas=(0.9, 0.999), eps=1e-08)") !=
        std::string::npos);
  CHECK(py.find("raise ValueError(\"set \" + \", \".join(unset)") != std::string::npos);

  // Lightning keeps the optimizer (for configure_optimizers) and the clipping.
  std::string lightning = Export(resnet, ExportTarget::kLightning);
  CHECK(lightning.find("def make_optimizer(params):\n") != std::string::npos);
  CHECK(lightning.find("#         return make_optimizer(self.parameters())\n") !=
        std::string::npos);
  CHECK(lightning.find("    return torch.optim.AdamW(params, lr=LEARNING_RATE") !=
        std::string::npos);
  CHECK(lightning.find("    gradient_clip_val=1.0,\n") != std::string::npos);
  // Accelerate's YAML has no key for them: the comment gives the script lines.
  std::string accelerate = Export(resnet, ExportTarget::kAccelerate);
  CHECK(accelerate.find("#   optimizer = torch.optim.AdamW(model.parameters(), lr=LEARNING_RATE") !=
        std::string::npos);
  CHECK(accelerate.find("#       accelerator.clip_grad_norm_(model.parameters(), 1.0)\n") !=
        std::string::npos);

  // A momentum plan without a momentum: DeepSpeed's SGD would keep no buffer, so it says so.
  nlohmann::json mlp = LoadPlan("mlp_fp32_sgd_plan.json");
  nlohmann::json mlp_ds = nlohmann::json::parse(Export(mlp, ExportTarget::kDeepSpeed));
  CHECK(mlp_ds["optimizer"] == nlohmann::json::parse(R"({"type": "SGD", "params": {}})"));
  CHECK_THAT(mlp_ds["_not_expressed"][1].get<std::string>(),
             Catch::StartsWith("optimizer.params.momentum: yours to set, > 0"));
  CHECK(Export(mlp, ExportTarget::kPytorchLoop).find("\nSGD_MOMENTUM = None  # yours to set") !=
        std::string::npos);
}

TEST_CASE("Export comments name commands that exist", "[export]") {
  // `memplan export --target` never existed; the flag is --to.
  ExportOptions options;
  options.plan_path = "plan.json";
  for (const char* name : {"resnet18_fp16_plan.json", "gpt_bf16_plan.json"}) {
    for (ExportTarget target : kAllExportTargets) {
      // torchtune refuses fp16 (its recipes raise; torchtune_export_test.cc).
      if (target == ExportTarget::kTorchtune && LoadPlan(name)["plan"]["precision"] == "fp16")
        continue;
      std::string text = Export(LoadPlan(name), target, options);
      INFO(name << " -> " << ExportTargetName(target));
      CHECK(text.find("--target") == std::string::npos);
    }
  }
  CHECK(Export(LoadPlan("resnet18_fp16_plan.json"), ExportTarget::kLightning, options)
            .find("`memplan export plan.json --to pytorch` writes") != std::string::npos);
}

TEST_CASE("Every output but hf-trainer-json names memplan, the model and the plan", "[export]") {
  nlohmann::json plan = LoadPlan("resnet18_fp16_plan.json");
  ExportOptions options;
  options.plan_path = "plans/resnet.json";
  const std::string sentence =
      "Generated by memplan from model 'tests/fixtures/resnet18_opset13.onnx' (plan "
      "'plans/resnet.json'): micro-batch 8 x 4 accumulation steps = 32 samples per optimizer "
      "step, fp16, recompute 6 nodes in 2 segments.";
  for (ExportTarget target : kAllExportTargets) {
    // torchtune refuses fp16 (its recipes raise): the same plan in bf16 there.
    nlohmann::json bf16 = plan;
    bf16["plan"]["precision"] = "bf16";
    const bool torchtune = target == ExportTarget::kTorchtune;
    std::string text = Export(torchtune ? bf16 : plan, target, options);
    INFO(ExportTargetName(target));
    CHECK(text.back() == '\n');
    if (target == ExportTarget::kHfTrainerJson) {
      CHECK(text.find("Generated by") == std::string::npos);  // strict parsers reject extra keys
    } else if (target == ExportTarget::kDeepSpeed) {
      CHECK(nlohmann::json::parse(text)["_comment"] == sentence);
    } else if (torchtune) {
      std::string bf16_sentence = sentence;
      bf16_sentence.replace(bf16_sentence.find("fp16"), 4, "bf16");
      CHECK(FirstLine(text) == "# " + bf16_sentence);
    } else {
      CHECK(FirstLine(text) == "# " + sentence);
    }
  }
}

TEST_CASE("A newline in the model path cannot escape a comment line", "[export]") {
  nlohmann::json plan = LoadPlan("mlp_fp32_sgd_plan.json");
  plan["model"]["path"] = "evil\nimport os";
  std::string py = Export(plan, ExportTarget::kPytorchLoop);
  CHECK(FirstLine(py).find("evil?import os") != std::string::npos);
  CHECK(py.find("\nimport os") == std::string::npos);
}

// apply_liger_kernel_to_llama's defaults (liger_kernel/transformers/monkey_patch.py): rope,
// rms_norm, swiglu and fused_linear_cross_entropy on, cross_entropy off; Gemma's takes geglu for
// swiglu, and each apply function is passed only its own keys. use_liger_kernel=True
// alone runs them all; a plan with only some names them in liger_kernel_config.
TEST_CASE("Liger kernels export as use_liger_kernel with exactly the planned kernels", "[export]") {
  nlohmann::json plan = LoadPlan("lm_head_fused_plan.json");
  const std::string fused_only = Export(plan, ExportTarget::kHfTrainer);
  CHECK_THAT(fused_only, Catch::Contains("use_liger_kernel=True"));
  CHECK_THAT(fused_only,
             Catch::Contains("liger_kernel_config={\"rope\": False, \"rms_norm\": False, "
                             "\"swiglu\": False, \"geglu\": False, \"cross_entropy\": False, "
                             "\"fused_linear_cross_entropy\": True}"));
  plan["plan"]["fusions"] = "liger";
  const std::string both = Export(plan, ExportTarget::kHfTrainer);
  CHECK_THAT(both, Catch::Contains("use_liger_kernel=True"));
  CHECK_THAT(both, !Catch::Contains("liger_kernel_config"));
  plan["plan"]["fused_loss"] = false;
  const std::string kernels_only = Export(plan, ExportTarget::kHfTrainer);
  CHECK_THAT(kernels_only,
             Catch::Contains("liger_kernel_config={\"rope\": True, \"rms_norm\": True, "
                             "\"swiglu\": True, \"geglu\": True, \"cross_entropy\": False, "
                             "\"fused_linear_cross_entropy\": False}"));
  const nlohmann::json json = nlohmann::json::parse(Export(plan, ExportTarget::kHfTrainerJson));
  CHECK(json["use_liger_kernel"] == true);
  CHECK(json["liger_kernel_config"]["swiglu"] == true);
  CHECK(json["liger_kernel_config"]["geglu"] == true);
  CHECK(json["liger_kernel_config"]["fused_linear_cross_entropy"] == false);
  // A target without Liger refuses, naming the flag; a misspelt set is an error naming the key.
  CHECK_THAT(testing::RequireError(ExportConfig(plan, ExportTarget::kPytorchLoop, {})),
             Catch::Contains("cannot express --fusions liger"));
  plan["plan"]["fusions"] = "ligre";
  CHECK_THAT(testing::RequireError(ExportConfig(plan, ExportTarget::kHfTrainer, {})),
             Catch::Contains("unknown plan.fusions 'ligre' (expected ops, all, liger, none)"));
}

TEST_CASE("Export errors name the problem", "[export]") {
  nlohmann::json plan = LoadPlan("resnet18_fp16_plan.json");
  auto error_of = [](const nlohmann::json& p, const ExportOptions& o = {}) {
    return testing::RequireError(ExportConfig(p, ExportTarget::kDeepSpeed, o));
  };
  nlohmann::json no_plan = plan;
  no_plan.erase("plan");
  CHECK_THAT(error_of(no_plan), Catch::Contains("'plan' is missing"));
  nlohmann::json bad_precision = plan;
  bad_precision["plan"]["precision"] = "fp8";
  CHECK_THAT(error_of(bad_precision), Catch::Contains("unknown plan.precision 'fp8'"));
  nlohmann::json zero_micro = plan;
  zero_micro["plan"]["micro_batch"] = 0;
  CHECK_THAT(error_of(zero_micro), Catch::Contains("'plan.micro_batch' must be at least 1"));
  nlohmann::json bad_optimizer = plan;
  bad_optimizer["plan"]["optimizer"] = "sophia";  // lion is known since the fine-tuning flags
  CHECK_THAT(error_of(bad_optimizer), Catch::Contains("unknown plan.optimizer 'sophia'"));
  nlohmann::json wrong_schema = plan;
  wrong_schema["schema"] = "memplan/2";
  CHECK_THAT(error_of(wrong_schema), Catch::Contains("\"memplan/1\""));
  // Fields of the wrong JSON type are errors naming them (they used to escape as nlohmann
  // exceptions, printed as "internal error").
  nlohmann::json schema_number = plan;
  schema_number["schema"] = 1;
  CHECK_THAT(error_of(schema_number), Catch::Contains("\"memplan/1\""));
  nlohmann::json path_number = plan;
  path_number["model"]["path"] = 5;
  CHECK_THAT(error_of(path_number), Catch::Contains("'model.path' is not a string"));
  nlohmann::json clip_text = plan;
  clip_text["plan"]["clip_gradients"] = "yes";
  CHECK_THAT(error_of(clip_text), Catch::Contains("'plan.clip_gradients' is not a boolean"));
  ExportOptions negative_lr;
  negative_lr.learning_rate = -1;
  CHECK_THAT(error_of(plan, negative_lr), Catch::Contains("learning rate"));

  CHECK(ParseExportTarget("hf-trainer-json").ok());
  CHECK(testing::RequireError(ParseExportTarget("keras")) ==
        "unknown export target 'keras' (expected one of: deepspeed, hf-trainer, hf-trainer-json, "
        "accelerate, lightning, pytorch, torchtune)");
}

}  // namespace
}  // namespace memplan
