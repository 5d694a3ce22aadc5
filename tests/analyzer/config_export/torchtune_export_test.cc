// `memplan export --to torchtune` (analyzer/config_export/torchtune_export.cc): the recipe config's
// fields against the plan, and the refusals of what torchtune's recipes cannot run. Plans are
// tests/fixtures/plans/gpt_bf16_plan.json (tiny GPT, bf16, micro-batch 4 x 8 accumulation steps,
// Adam, 5 recomputed nodes, 1,000,000 parameters) with the keys `memplan analyze --json` writes for
// the feature under test. Expected values are the plan's, read off the fixture by hand; the YAML
// is parsed by tools/recipes/validate_torchtune_config.py with torchtune itself (docs/
// config_export.md records that run).

#include <catch2/catch.hpp>

#include <fstream>
#include <map>
#include <sstream>
#include <string>

#include <nlohmann/json.hpp>
#include "analyzer/config_export/export_config.h"
#include "analyzer/config_export/torchtune_lora_modules.h"
#include "tests/require_value.h"
#include "tests/test_paths.h"

namespace memplan {
namespace {

// The bf16 GPT plan in the regime torchtune runs (the model cast to bf16: pure).
nlohmann::json GptPlan() {
  std::ifstream in(memplan::testing::FixturesDir() + "/plans/gpt_bf16_plan.json");
  REQUIRE(in.good());
  nlohmann::json plan = nlohmann::json::parse(in);
  plan["plan"]["amp_mode"] = "pure";
  return plan;
}

// A two-level YAML mapping as "section.key" (or "key") -> raw value text, comments dropped.
// Fails on a line that is neither `key: value`, `key:` opening a section, nor an indented
// `key: value` inside one, and on a repeated key.
std::map<std::string, std::string> NestedYaml(const std::string& text) {
  std::map<std::string, std::string> entries;
  std::istringstream lines(text);
  std::string line;
  std::string section;
  while (std::getline(lines, line)) {
    if (line.empty() || line[0] == '#') continue;
    INFO("YAML line: " << line);
    const bool indented = line.rfind("  ", 0) == 0;
    std::string body = indented ? line.substr(2) : line;
    body = body.substr(0, body.find("  #"));  // a trailing comment
    const size_t colon = body.find(':');
    REQUIRE(colon != std::string::npos);
    const std::string key = body.substr(0, colon);
    REQUIRE(key.find_first_of(" \t'\"") == std::string::npos);
    const std::string value = colon + 1 < body.size() ? body.substr(colon + 2) : "";
    if (!indented && value.empty()) {
      section = key;
      continue;
    }
    const std::string full = indented ? section + "." + key : key;
    REQUIRE(!(indented && section.empty()));
    REQUIRE(entries.count(full) == 0);
    entries[full] = value;
    if (!indented) section.clear();
  }
  return entries;
}

std::map<std::string, std::string> Export(const nlohmann::json& plan,
                                          const ExportOptions& options = {}) {
  return NestedYaml(testing::RequireValue(ExportConfig(plan, ExportTarget::kTorchtune, options)));
}

std::string Refusal(const nlohmann::json& plan) {
  const std::string message =
      testing::RequireError(ExportConfig(plan, ExportTarget::kTorchtune, ExportOptions{}));
  CHECK(message.find('\n') == std::string::npos);  // one line
  return message;
}

TEST_CASE("torchtune: a full bf16 plan on one GPU", "[export][torchtune]") {
  const std::string text =
      testing::RequireValue(ExportConfig(GptPlan(), ExportTarget::kTorchtune, ExportOptions{}));
  CHECK(text.find("# Run: tune run full_finetune_single_device --config torchtune_config.yaml") !=
        std::string::npos);
  const auto yaml = NestedYaml(text);
  CHECK(yaml.at("batch_size") == "4");                   // plan.micro_batch
  CHECK(yaml.at("gradient_accumulation_steps") == "8");  // plan.accumulation_steps
  CHECK(yaml.at("dtype") == "bf16");
  CHECK(yaml.at("enable_activation_checkpointing") == "True");  // 5 recomputed nodes
  CHECK(yaml.at("enable_activation_offloading") == "False");
  CHECK(yaml.at("optimizer_in_bwd") == "False");
  CHECK(yaml.at("compile") == "False");
  CHECK(yaml.at("optimizer._component_") == "torch.optim.Adam");
  CHECK(yaml.at("optimizer.lr") == "???");            // not decided by the plan
  CHECK(yaml.at("optimizer.weight_decay") == "0.0");  // Adam: as simulated, no decay
  CHECK(yaml.at("loss._component_") == "torch.nn.CrossEntropyLoss");
  CHECK(yaml.at("clip_grad_norm") == "1.0");  // clip_gradients absent: true; default norm 1.0
  CHECK(yaml.at("model._component_") == "???");
  CHECK(yaml.count("model.lora_rank") == 0);
  CHECK(yaml.count("fsdp_cpu_offload") == 0);  // single device
}

TEST_CASE("torchtune: fp32, the implementation keyword and the user's lr", "[export][torchtune]") {
  nlohmann::json plan = GptPlan();
  plan["plan"]["precision"] = "fp32";
  plan["plan"].erase("amp_mode");
  plan["plan"]["optimizer"] = "adamw";
  plan["plan"]["optimizer_impl"] = "fused";
  plan["plan"]["recompute"] = nlohmann::json::array();
  plan["plan"]["clip_gradients"] = false;
  ExportOptions options;
  options.learning_rate = 2e-5;
  options.weight_decay = 0.01;
  const auto yaml = Export(plan, options);
  CHECK(yaml.at("dtype") == "fp32");
  CHECK(yaml.at("optimizer._component_") == "torch.optim.AdamW");
  CHECK(yaml.at("optimizer.fused") == "True");
  CHECK(yaml.at("optimizer.lr") == "2e-05");
  CHECK(yaml.at("optimizer.weight_decay") == "0.01");
  CHECK(yaml.at("enable_activation_checkpointing") == "False");
  CHECK(yaml.at("clip_grad_norm") == "null");  // simulated without clipping
}

TEST_CASE("torchtune: LoRA and QLoRA take the rank and the attention modules from plan.lora",
          "[export][torchtune]") {
  nlohmann::json plan = GptPlan();
  plan["model"]["parameter_count"] = 1000000;
  plan["plan"]["trainable_parameter_count"] = 16384;
  plan["plan"]["base_dtype"] = "bf16";
  plan["plan"]["lora"] = {{"rank", 16},
                          {"alpha", 32},
                          {"target_modules",
                           {"model.layers.0.self_attn.q_proj", "model.layers.0.self_attn.v_proj",
                            "model.layers.1.self_attn.q_proj", "model.layers.1.self_attn.v_proj"}}};
  const std::string text =
      testing::RequireValue(ExportConfig(plan, ExportTarget::kTorchtune, ExportOptions{}));
  CHECK(text.find("tune run lora_finetune_single_device") != std::string::npos);
  auto yaml = NestedYaml(text);
  CHECK(yaml.at("model.lora_rank") == "16");
  CHECK(yaml.at("model.lora_alpha") == "32.0");  // plan.lora.alpha, torchtune's float
  CHECK(yaml.at("model.lora_attn_modules") == "['q_proj', 'v_proj']");
  CHECK(yaml.at("model.apply_lora_to_mlp") == "False");
  CHECK(yaml.at("model.apply_lora_to_output") == "False");
  CHECK(yaml.at("model.lora_dropout") == "0.0");
  CHECK(yaml.count("model.quantize_base") == 0);

  plan["plan"]["base_dtype"] = "nf4";  // QLoRA: the LoRA recipe with an NF4 base
  yaml = Export(plan);
  CHECK(yaml.at("model.quantize_base") == "True");
}

TEST_CASE("torchtune: LoRA targets map to torchtune's switches by module name",
          "[export][torchtune]") {
  using config_export::TorchtuneLoraModulesOf;
  // GPT-2's fused c_attn is q, k and v; attn.c_proj the output projection; mlp.c_fc alone is
  // part of GPT-2's two-projection MLP.
  auto gpt2 = TorchtuneLoraModulesOf(
      {"transformer.h.0.attn.c_attn", "transformer.h.0.attn.c_proj", "transformer.h.0.mlp.c_fc"});
  CHECK(gpt2.attention == std::vector<std::string>{"q_proj", "k_proj", "v_proj", "output_proj"});
  CHECK(gpt2.mlp);
  CHECK(gpt2.partial_mlp);
  // Llama's three MLP projections and the head: all of the MLP, the output.
  auto llama = TorchtuneLoraModulesOf({"model.layers.0.mlp.gate_proj", "model.layers.0.mlp.up_proj",
                                       "model.layers.0.mlp.down_proj", "lm_head"});
  CHECK(llama.attention.empty());
  CHECK(llama.mlp);
  CHECK_FALSE(llama.partial_mlp);
  CHECK(llama.output);
  // BERT: attention.output.dense is the attention's output projection, not the MLP's.
  auto bert = TorchtuneLoraModulesOf(
      {"bert.encoder.layer.0.attention.output.dense", "bert.encoder.layer.0.attention.self.query"});
  CHECK(bert.attention == std::vector<std::string>{"q_proj", "output_proj"});
  CHECK_FALSE(bert.mlp);
  // timm's (and this repo's tiny GPT's) attn.qkv and attn.proj.
  auto timm = TorchtuneLoraModulesOf({"blocks.0.attn.qkv", "blocks.0.attn.proj"});
  CHECK(timm.attention == std::vector<std::string>{"q_proj", "k_proj", "v_proj", "output_proj"});
  auto odd = TorchtuneLoraModulesOf({"model.proj_in"});
  CHECK(odd.unmapped == std::vector<std::string>{"model.proj_in"});
  // A suffix match needs a whole module name: "model.my_q_proj" is not q_proj.
  CHECK(TorchtuneLoraModulesOf({"model.my_q_proj"}).unmapped.size() == 1);
}

TEST_CASE("torchtune: FSDP on 8 GPUs runs the distributed recipe", "[export][torchtune]") {
  nlohmann::json plan = GptPlan();
  plan["plan"]["parallel"] = "fsdp";
  plan["plan"]["gpus"] = 8;
  plan["plan"]["engine_options"] = {{"auto_wrap_policy", "transformer"}};
  const std::string text =
      testing::RequireValue(ExportConfig(plan, ExportTarget::kTorchtune, ExportOptions{}));
  CHECK(text.find("tune run --nproc_per_node 8 full_finetune_distributed") != std::string::npos);
  // 4 x 8 x 8 GPUs = 256 samples per optimizer step.
  CHECK(text.find("256 samples per optimizer step") != std::string::npos);
  const auto yaml = NestedYaml(text);
  CHECK(yaml.at("batch_size") == "4");  // per rank
  CHECK(yaml.at("fsdp_cpu_offload") == "False");
  CHECK(yaml.at("fsdp_reshard_after_forward") == "True");

  plan["plan"]["offload"] = {{"mode", "optimizer+params"}};
  CHECK(Export(plan).at("fsdp_cpu_offload") == "True");
}

TEST_CASE("torchtune: activation offloading, compile, chunked loss, optimizer in backward",
          "[export][torchtune]") {
  nlohmann::json plan = GptPlan();
  plan["plan"]["offload"] = {{"mode", "activations"}};
  plan["plan"]["compile"] = true;
  plan["plan"]["loss_chunks"] = 8;
  auto yaml = Export(plan);
  CHECK(yaml.at("enable_activation_offloading") == "True");
  CHECK(yaml.at("enable_activation_checkpointing") == "True");
  CHECK(yaml.at("compile") == "True");
  CHECK(yaml.at("loss._component_") == "torchtune.modules.loss.CEWithChunkedOutputLoss");
  CHECK(yaml.at("loss.num_output_chunks") == "8");

  plan["plan"]["accumulation_steps"] = 1;
  plan["plan"]["optimizer_in_backward"] = true;
  yaml = Export(plan);
  CHECK(yaml.at("optimizer_in_bwd") == "True");
  CHECK(yaml.at("clip_grad_norm") == "null");  // the recipes refuse clipping in backward
}

TEST_CASE("torchtune: the offload hooks the plan modelled, and the targets that refuse them",
          "[export][torchtune]") {
  nlohmann::json plan = GptPlan();
  plan["plan"]["offload"] = {{"mode", "activations"}, {"hooks", "torchtune-streams"}};
  // enable_activation_offloading builds OffloadActivations(use_streams=True): what was planned.
  std::string text =
      testing::RequireValue(ExportConfig(plan, ExportTarget::kTorchtune, ExportOptions{}));
  CHECK(NestedYaml(text).at("enable_activation_offloading") == "True");
  CHECK(text.find("use_streams=True), not the") == std::string::npos);
  // Planned without the stream: the comment says the recipe runs it with one.
  plan["plan"]["offload"]["hooks"] = "torchtune";
  text = testing::RequireValue(ExportConfig(plan, ExportTarget::kTorchtune, ExportOptions{}));
  CHECK(text.find("not the --offload-hooks torchtune the plan modelled") != std::string::npos);
  // Only torchtune's recipes run OffloadActivations.
  const std::string message =
      testing::RequireError(ExportConfig(plan, ExportTarget::kPytorchLoop, ExportOptions{}));
  CHECK(message ==
        "export: pytorch cannot express --offload-hooks torchtune (torchtune's "
        "OffloadActivations), which the plan modelled; export with --to torchtune");
  plan["plan"]["offload"]["hooks"] = "tensorflow";
  CHECK(testing::RequireError(ExportConfig(plan, ExportTarget::kTorchtune, ExportOptions{}))
            .find("plan.offload.hooks: unknown offload hooks 'tensorflow'") != std::string::npos);
}

TEST_CASE("torchtune refuses what its recipes cannot run, in one line", "[export][torchtune]") {
  nlohmann::json fp16 = GptPlan();
  fp16["plan"]["precision"] = "fp16";
  CHECK(Refusal(fp16).find("--precision fp16") != std::string::npos);

  nlohmann::json autocast = GptPlan();
  autocast["plan"]["amp_mode"] = "autocast";
  CHECK(Refusal(autocast).find("--amp-mode autocast") != std::string::npos);

  for (const char* strategy : {"ddp", "zero1", "zero2", "zero3"}) {
    nlohmann::json zero = GptPlan();
    zero["plan"]["amp_mode"] = "pure";
    zero["plan"]["parallel"] = strategy;
    zero["plan"]["gpus"] = 8;
    INFO(strategy);
    CHECK(Refusal(zero).find("--parallel " + std::string(strategy)) != std::string::npos);
  }
  nlohmann::json size_wrap = GptPlan();
  size_wrap["plan"]["parallel"] = "fsdp";
  size_wrap["plan"]["gpus"] = 8;
  CHECK(Refusal(size_wrap).find("auto_wrap_policy=size") != std::string::npos);

  nlohmann::json offload = GptPlan();
  offload["plan"]["recompute"] = nlohmann::json::array();
  offload["plan"]["offload"] = {{"mode", "activations"}};
  CHECK(Refusal(offload).find("without recompute") != std::string::npos);

  nlohmann::json one_gpu_offload = GptPlan();
  one_gpu_offload["plan"]["offload"] = {{"mode", "optimizer+params"}};
  CHECK(Refusal(one_gpu_offload).find("on one GPU") != std::string::npos);

  nlohmann::json frozen = GptPlan();
  frozen["plan"]["trainable_parameter_count"] = 500000;  // of model.parameter_count 1,000,000
  CHECK(Refusal(frozen).find("partly frozen") != std::string::npos);

  nlohmann::json int8 = GptPlan();
  int8["plan"]["base_dtype"] = "int8";
  int8["plan"]["lora"] = {{"rank", 8}, {"target_modules", {"model.layers.0.self_attn.q_proj"}}};
  CHECK(Refusal(int8).find("--base-dtype int8") != std::string::npos);

  // LoRA only on modules no switch names: the recipe would adapt (and train) nothing.
  nlohmann::json unmapped = GptPlan();
  unmapped["plan"]["lora"] = {{"rank", 8}, {"target_modules", {"blocks.0.mlp.0"}}};
  CHECK(Refusal(unmapped).find("cannot express LoRA on blocks.0.mlp.0") != std::string::npos);

  nlohmann::json in_backward = GptPlan();  // accumulation 8
  in_backward["plan"]["optimizer_in_backward"] = true;
  CHECK(Refusal(in_backward).find("accumulation") != std::string::npos);

  // The unchunked output is upcast (TransformerDecoder.unembed: .float()): a bf16 loss is not
  // what the recipe runs; chunked, each chunk is upcast by the loss, as --loss-chunks plans.
  nlohmann::json half_loss = GptPlan();
  half_loss["plan"]["loss_dtype"] = "bf16";
  CHECK(Refusal(half_loss).find("--loss-dtype fp32") != std::string::npos);
  half_loss["plan"]["loss_chunks"] = 8;
  CHECK(ExportConfig(half_loss, ExportTarget::kTorchtune, ExportOptions{}).ok());

  // bitsandbytes steps plain tensors, not the DTensor shards of FSDP2's fully_shard.
  nlohmann::json sharded_8bit = GptPlan();
  sharded_8bit["plan"]["parallel"] = "fsdp";
  sharded_8bit["plan"]["gpus"] = 8;
  sharded_8bit["plan"]["engine_options"] = {{"auto_wrap_policy", "transformer"}};
  sharded_8bit["plan"]["optimizer"] = "adamw8bit";
  CHECK(Refusal(sharded_8bit)
            .find("torchtune's distributed recipe cannot run --optimizer "
                  "adamw8bit") != std::string::npos);
}

}  // namespace
}  // namespace memplan
