// Baseline and config-list files: round trips, determinism, validation messages, model paths.

#include <catch2/catch.hpp>

#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include "analyzer/baseline/baseline.h"
#include "analyzer/baseline/config_list.h"
#include "analyzer/baseline/memory_result.h"
#include "analyzer/baseline/pinned_plan.h"
#include "tests/analyzer/baseline/baseline_test_models.h"
#include "tests/require_value.h"
#include "tests/test_paths.h"

namespace memplan {
namespace {

std::filesystem::path ScratchDir() {
  std::filesystem::path dir = std::filesystem::temp_directory_path() /
                              ("memplan_baseline_io_" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir / "ci");
  return dir;
}

std::string ReadText(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

void WriteText(const std::filesystem::path& path, const std::string& text) {
  std::ofstream out(path, std::ios::binary);
  out << text;
}

std::string ErrorOf(const nlohmann::json& json) {
  return testing::RequireError(BaselineFromJson(json));
}

TEST_CASE("A baseline round-trips through its file byte for byte", "[baseline]") {
  std::filesystem::path dir = ScratchDir();
  BaselineEntry gpt = baseline_test::Entry("gpt-seq128", baseline_test::MlpWidenedResult());
  gpt.config.model = "../models/gpt.onnx";
  gpt.config.flags = PlanFlags{};
  gpt.config.flags.dims = {{"seq", 128}};
  gpt.config.flags.micro_batch = 4;
  gpt.config.flags.global_batch = 32;
  gpt.config.flags.recompute = "sqrt";
  gpt.config.flags.allocator = "caching";
  gpt.config.flags.gpu = "A100-80GB";
  Baseline original =
      baseline_test::BaselineOf({baseline_test::Entry("mlp", baseline_test::MlpResult()), gpt});

  std::filesystem::path path = dir / "ci" / "memplan.baseline.json";
  REQUIRE(WriteBaseline(original, path).ok());
  Expected<Baseline> read = ReadBaseline(path);
  REQUIRE(read.ok());
  REQUIRE(read->entries.size() == 2);
  for (size_t i = 0; i < 2; ++i) {
    CHECK(read->entries[i].config == original.entries[i].config);
    CHECK(read->entries[i].result == original.entries[i].result);
  }
  CHECK(read->directory == path.parent_path());
  CHECK(ResolveModelPath(read->directory, "../models/gpt.onnx") == dir / "models" / "gpt.onnx");

  std::filesystem::path again = dir / "again.json";
  REQUIRE(WriteBaseline(*read, again).ok());
  CHECK(ReadText(again) == ReadText(path));

  // The written form: documented keys in a fixed order, unset flags left out.
  nlohmann::json json = nlohmann::json::parse(ReadText(path));
  CHECK(json["schema"] == "memplan-baseline/1");
  CHECK(json["configurations"][0]["flags"] ==
        nlohmann::json::parse(R"({"batch": 8, "precision": "fp32", "optimizer": "adam"})"));
  CHECK(json["configurations"][1]["flags"] ==
        nlohmann::json::parse(R"({"dims": {"seq": 128}, "micro_batch": 4, "global_batch": 32,
            "recompute": "sqrt", "allocator": "caching", "gpu": "A100-80GB"})"));
  CHECK(json["configurations"][0]["result"]["saved_bytes_by_node"]["/relu1/Relu"] == 8192);
  CHECK(json["configurations"][0]["result"]["breakdown"]["optimizer_state"] == 546896);
  std::filesystem::remove_all(dir);
}

TEST_CASE("Baseline validation names the problem", "[baseline]") {
  nlohmann::json good = BaselineToJson(
      baseline_test::BaselineOf({baseline_test::Entry("mlp", baseline_test::MlpResult())}));
  REQUIRE(BaselineFromJson(good).ok());

  nlohmann::json wrong_schema = good;
  wrong_schema["schema"] = "memplan/1";
  CHECK_THAT(ErrorOf(wrong_schema), Catch::Contains("memplan-baseline/1"));

  // A schema of the wrong JSON type used to escape as an nlohmann type_error (libFuzzer finding).
  nlohmann::json schema_list = good;
  schema_list["schema"] = nlohmann::json::array({"memplan-baseline/1"});
  CHECK_THAT(ErrorOf(schema_list), Catch::Contains("memplan-baseline/1"));

  // A baseline of nothing would let every `check` pass.
  nlohmann::json empty = good;
  empty["configurations"] = nlohmann::json::array();
  CHECK_THAT(ErrorOf(empty), Catch::Contains("'configurations' is empty"));

  nlohmann::json twice = good;
  twice["configurations"].push_back(good["configurations"][0]);
  CHECK(ErrorOf(twice) == "baseline: configuration name 'mlp' appears twice");

  nlohmann::json typo = good;
  typo["configurations"][0]["flags"]["micro-batch"] = 4;
  CHECK_THAT(ErrorOf(typo), Catch::StartsWith("configuration 'mlp': unknown flag 'micro-batch'"));

  nlohmann::json negative = good;
  negative["configurations"][0]["result"]["peak_bytes"] = -1;
  CHECK(ErrorOf(negative) ==
        "configuration 'mlp': 'peak_bytes' must be an integer byte count >= 0");

  nlohmann::json no_category = good;
  no_category["configurations"][0]["result"]["breakdown"].erase("workspace");
  CHECK(ErrorOf(no_category) == "configuration 'mlp': breakdown 'workspace' is missing");

  nlohmann::json unnamed = good;
  unnamed["configurations"][0].erase("name");
  CHECK(ErrorOf(unnamed) == "configuration #1: 'name' must be a non-empty string");

  nlohmann::json zero_batch = good;
  zero_batch["configurations"][0]["flags"]["batch"] = 0;
  CHECK(ErrorOf(zero_batch) == "configuration 'mlp': flag 'batch' must be an integer >= 1");

  std::filesystem::path dir = ScratchDir();
  WriteText(dir / "broken.json", "{\"schema\": ");
  Expected<Baseline> broken = ReadBaseline(dir / "broken.json");
  REQUIRE_FALSE(broken.ok());
  CHECK_THAT(broken.error().message, Catch::Contains("broken.json is not valid JSON"));
  Expected<Baseline> absent = ReadBaseline(dir / "absent.json");
  REQUIRE_FALSE(absent.ok());
  CHECK_THAT(absent.error().message, Catch::StartsWith("cannot read "));
  std::filesystem::remove_all(dir);
}

TEST_CASE("Config lists name model + flags pairs relative to the list", "[baseline]") {
  std::filesystem::path dir = ScratchDir();
  WriteText(dir / "ci" / "memplan.configs.json", R"({
    "schema": "memplan-configs/1",
    "configurations": [
      {"name": "resnet18-b64-fp16", "model": "../models/resnet18.onnx",
       "flags": {"batch": 64, "precision": "fp16", "gpu": "A100-80GB"}},
      {"name": "gpt-seq512", "model": "/abs/gpt.onnx",
       "flags": {"batch": 16, "dims": {"seq": 512}, "recompute": "sqrt"}}
    ]})");
  Expected<ConfigList> list = ReadConfigList(dir / "ci" / "memplan.configs.json");
  REQUIRE(list.ok());
  REQUIRE(list->configurations.size() == 2);
  const CheckConfiguration& resnet = list->configurations[0];
  CHECK(resnet.name == "resnet18-b64-fp16");
  CHECK(resnet.flags.batch == 64);
  CHECK(resnet.flags.precision == "fp16");
  CHECK_FALSE(resnet.flags.micro_batch.has_value());
  CHECK(ResolveModelPath(list->directory, resnet.model) == dir / "models" / "resnet18.onnx");
  CHECK(list->configurations[1].flags.dims.at("seq") == 512);
  CHECK(ResolveModelPath(list->directory, "/abs/gpt.onnx") == "/abs/gpt.onnx");
  CHECK(PlanFlagsAsArguments(list->configurations[1].flags) ==
        "--batch 16 --dim seq=512 --recompute sqrt");

  // The baseline written next to the list elsewhere gets paths relative to itself.
  CHECK(ModelPathRelativeTo(dir / "models" / "resnet18.onnx", dir / "memplan.baseline.json") ==
        "models/resnet18.onnx");
  CHECK(ModelPathRelativeTo(dir / "models" / "resnet18.onnx", dir / "ci" / "b.json") ==
        "../models/resnet18.onnx");

  Expected<ConfigList> empty = ConfigListFromJson(
      nlohmann::json::parse(R"({"schema": "memplan-configs/1", "configurations": []})"));
  REQUIRE_FALSE(empty.ok());
  CHECK(empty.error().message == "config list: 'configurations' must be a non-empty array");
  std::filesystem::remove_all(dir);
}

TEST_CASE("A result is read from memplan analyze --json", "[baseline]") {
  std::ifstream in(memplan::testing::FixturesDir() + "/plans/resnet18_fp16_plan.json");
  nlohmann::json plan = nlohmann::json::parse(in);
  Expected<MemoryResult> result = MemoryResultFromPlanJson(plan);
  REQUIRE(result.ok());
  // Values as written in the fixture.
  CHECK(result->peak_bytes == 3221225472);
  CHECK(result->breakdown[MemoryCategory::kParameters] == 70194672);
  CHECK(result->breakdown[MemoryCategory::kOther] == 41074224);
  CHECK(result->saved_activation_bytes == 2684354560);
  CHECK(result->saved_bytes_by_node.empty());

  plan[kSavedActivationsByNodeKey] = {{"/conv1/Conv", 4816896}, {"/relu/Relu", 4194304}};
  result = MemoryResultFromPlanJson(plan);
  REQUIRE(result.ok());
  CHECK(result->saved_bytes_by_node.at("/conv1/Conv") == 4816896);

  plan.erase("breakdown");
  Expected<MemoryResult> missing = MemoryResultFromPlanJson(plan);
  REQUIRE_FALSE(missing.ok());
  CHECK(missing.error().message == "analyze output: 'breakdown' is missing or not an object");
}

TEST_CASE("Every plan flag round-trips and reads as its command-line flag", "[baseline]") {
  nlohmann::json json = nlohmann::json::parse(R"({
      "batch": 8, "global_batch": 64, "micro_batch": 8, "dims": {"seq": 128},
      "batch_dim": "N", "gpu": "24G", "reserve": "1G", "precision": "bf16", "optimizer": "sgd",
      "loss": "mse", "zero_grad": "zero", "allocator": "exact", "recompute": "sqrt",
      "fp32_ops": "Softmax", "fp16_ops": "/fc1/MatMul", "loss_scaling": "static:1024",
      "clip_grad": true})");
  Expected<PlanFlags> flags = PlanFlagsFromJson(json, "");
  REQUIRE(flags.ok());
  CHECK(flags->global_batch == 64);
  CHECK(flags->zero_grad == "zero");
  CHECK(flags->clip_grad);
  CHECK(nlohmann::json(PlanFlagsToJson(*flags)) == json);
  CHECK(
      PlanFlagsAsArguments(*flags) ==
      "--batch 8 --global-batch 64 --micro-batch 8 --dim seq=128 --batch-dim N --gpu 24G "
      "--reserve 1G --precision bf16 --optimizer sgd --loss mse --zero-grad zero --allocator "
      "exact --recompute sqrt --fp32-ops Softmax --fp16-ops /fc1/MatMul --loss-scaling static:1024 "
      "--clip-grad");

  // clip_grad false is the default and is not written back.
  Expected<PlanFlags> no_clip =
      PlanFlagsFromJson(nlohmann::json::parse(R"({"clip_grad": false})"), "");
  REQUIRE(no_clip.ok());
  CHECK(PlanFlagsToJson(*no_clip).empty());
  Expected<PlanFlags> bad_clip =
      PlanFlagsFromJson(nlohmann::json::parse(R"({"clip_grad": 1})"), "c: ");
  REQUIRE_FALSE(bad_clip.ok());
  CHECK(bad_clip.error().message == "c: flag 'clip_grad' must be true or false");
  Expected<PlanFlags> old_key =
      PlanFlagsFromJson(nlohmann::json::parse(R"({"accumulation": 4})"), "c: ");
  REQUIRE_FALSE(old_key.ok());
  CHECK_THAT(old_key.error().message, Catch::StartsWith("c: unknown flag 'accumulation' (known: "));
}

// The plan flags read from `json_text`, checked to write back as the same JSON and to read as
// `arguments` on the command line.
PlanFlags RoundTripped(const char* json_text, const std::string& arguments) {
  const nlohmann::json json = nlohmann::json::parse(json_text);
  Expected<PlanFlags> flags = PlanFlagsFromJson(json, "");
  REQUIRE(flags.ok());
  CHECK(nlohmann::json(PlanFlagsToJson(*flags)) == json);
  CHECK(PlanFlagsAsArguments(*flags) == arguments);
  return *flags;
}

TEST_CASE("the attention flag round-trips through configurations and baselines", "[baseline]") {
  const PlanFlags flags = RoundTripped(R"({"attention": "eager"})", "--attention eager");
  CHECK(flags.attention == "eager");
}

TEST_CASE("the offload flag round-trips through configurations and baselines", "[baseline]") {
  const PlanFlags flags =
      RoundTripped(R"({"offload": "optimizer+params"})", "--offload optimizer+params");
  CHECK(flags.offload == "optimizer+params");
  CHECK(PlanFlagWithKey("offload").argument == "--offload");
}

TEST_CASE("the offload-hooks flag round-trips through configurations and baselines", "[baseline]") {
  const PlanFlags flags =
      RoundTripped(R"({"offload": "activations", "offload_hooks": "torchtune-streams"})",
                   "--offload activations --offload-hooks torchtune-streams");
  CHECK(flags.offload_hooks == "torchtune-streams");
  CHECK(PlanFlagWithKey("offload_hooks").argument == "--offload-hooks");
}

TEST_CASE("the optimizer-impl flag round-trips through configurations and baselines",
          "[baseline]") {
  const PlanFlags flags = RoundTripped(R"({"optimizer": "adamw", "optimizer_impl": "for-loop"})",
                                       "--optimizer adamw --optimizer-impl for-loop");
  CHECK(flags.optimizer_impl == "for-loop");
  CHECK(PlanFlagWithKey("optimizer_impl").argument == "--optimizer-impl");
}

TEST_CASE("the compile flag round-trips through configurations and baselines", "[baseline]") {
  const PlanFlags flags = RoundTripped(R"({"compile": true})", "--compile");
  CHECK(flags.compile);
  CHECK(PlanFlagWithKey("compile").argument == "--compile");
  // false is the default and is not written back.
  Expected<PlanFlags> eager = PlanFlagsFromJson(nlohmann::json::parse(R"({"compile": false})"), "");
  REQUIRE(eager.ok());
  CHECK(PlanFlagsToJson(*eager).empty());
}

TEST_CASE("the recompute-reentrant flag round-trips through configurations and baselines",
          "[baseline]") {
  const PlanFlags flags = RoundTripped(R"({"recompute_reentrant": true})", "--recompute-reentrant");
  CHECK(flags.recompute_reentrant);
  CHECK(PlanFlagWithKey("recompute_reentrant").argument == "--recompute-reentrant");
}

}  // namespace
}  // namespace memplan

namespace memplan {
namespace {

TEST_CASE("A baseline records the plan it measured and the largest fitting micro-batch",
          "[baseline]") {
  BaselineEntry entry = baseline_test::Entry("resnet", baseline_test::MlpResult());
  PlanFlags plan;
  plan.micro_batch = 64;
  plan.global_batch = 256;  // k = 256 / 64 = 4 accumulation steps when replayed
  plan.precision = "fp16";
  plan.recompute = "optimal";
  entry.plan = plan;
  entry.largest_fitting_micro_batch = 97;
  Baseline original = baseline_test::BaselineOf({entry});

  nlohmann::ordered_json json = BaselineToJson(original);
  // Stored with the plan-flag keys, so flags other parts of memplan add are stored the same way.
  CHECK(nlohmann::json(json["configurations"][0]["plan"]) ==
        nlohmann::json::parse(R"({"global_batch": 256, "micro_batch": 64, "precision": "fp16",
                                   "recompute": "optimal"})"));
  CHECK(json["configurations"][0]["largest_fitting_micro_batch"] == 97);

  Expected<Baseline> read = BaselineFromJson(nlohmann::json::parse(json.dump()));
  REQUIRE(read.ok());
  REQUIRE(read->entries[0].plan.has_value());
  CHECK(*read->entries[0].plan == plan);
  CHECK(read->entries[0].largest_fitting_micro_batch == 97);

  // An older baseline without them still reads: check then re-plans and says so.
  nlohmann::json old = nlohmann::json::parse(json.dump());
  old["configurations"][0].erase("plan");
  old["configurations"][0].erase("largest_fitting_micro_batch");
  Expected<Baseline> old_read = BaselineFromJson(old);
  REQUIRE(old_read.ok());
  CHECK_FALSE(old_read->entries[0].plan.has_value());
  CHECK_FALSE(old_read->entries[0].largest_fitting_micro_batch.has_value());

  // A typo in the plan is an error like one in the flags.
  nlohmann::json typo = nlohmann::json::parse(json.dump());
  typo["configurations"][0]["plan"]["micro-batch"] = 8;
  Expected<Baseline> typo_read = BaselineFromJson(typo);
  REQUIRE_FALSE(typo_read.ok());
  CHECK_THAT(typo_read.error().message,
             Catch::Contains("configuration 'resnet': 'plan': unknown flag 'micro-batch'"));
}

TEST_CASE("A replayed plan overrides the configured flags and fixes the micro-batch",
          "[baseline]") {
  PlanFlags configured;
  configured.batch = 8;
  configured.gpu = "24G";
  configured.precision = "auto";
  PlanFlags pinned;
  pinned.micro_batch = 8;
  pinned.precision = "fp16";
  pinned.recompute = "none";
  PlanFlags replay = OverlayPlanFlags(configured, pinned);
  CHECK_FALSE(replay.batch.has_value());  // the pinned micro-batch names it
  CHECK(replay.micro_batch == 8);
  CHECK(replay.gpu == "24G");
  CHECK(replay.precision == "fp16");
  CHECK(replay.recompute == "none");
  CHECK(FixesMicroBatch(replay));
  CHECK_FALSE(FixesMicroBatch(WithoutFixedMicroBatch(replay)));
}

TEST_CASE("Configuration lines point annotations at each configuration's name", "[baseline]") {
  const std::string text =
      "{\n  \"schema\": \"memplan-baseline/1\",\n  \"configurations\": [\n    {\n"
      "      \"name\": \"a\",\n      \"model\": \"a.onnx\"\n    },\n    {\n"
      "      \"name\": \"b-2\",\n";
  std::map<std::string, int> lines = ConfigurationLines(text);
  CHECK(lines.at("a") == 5);
  CHECK(lines.at("b-2") == 9);
  CHECK(lines.size() == 2);
}

// Fine-tuning flags (docs/finetuning.md), in their own case so other flag groups stay apart.
TEST_CASE("Fine-tuning plan flags round-trip", "[baseline][finetune]") {
  nlohmann::json json = nlohmann::json::parse(R"({
      "train": "^fc\\.", "freeze": "embed", "lora": 8, "lora_targets": "q_proj|v_proj",
      "base_dtype": "nf4"})");
  Expected<PlanFlags> flags = PlanFlagsFromJson(json, "");
  REQUIRE(flags.ok());
  CHECK(flags->lora == 8);
  CHECK(flags->base_dtype == "nf4");
  CHECK(nlohmann::json(PlanFlagsToJson(*flags)) == json);
  CHECK(PlanFlagsAsArguments(*flags) ==
        "--train ^fc\\. --freeze embed --lora 8 --lora-targets q_proj|v_proj --base-dtype nf4");
}

}  // namespace
}  // namespace memplan
