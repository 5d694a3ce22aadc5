// The generated Python compiles and the generated YAML/JSON parse, checked by the real parsers:
// /usr/bin/python3 -m py_compile (CI has Debian's python3 but neither torch nor transformers, so
// the snippets are compiled, never imported), PyYAML's safe_load where python3-yaml is
// installed, and nlohmann for JSON.

#include <catch2/catch.hpp>

#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>

#include <nlohmann/json.hpp>
#include "analyzer/config_export/export_config.h"
#include "tests/test_paths.h"

namespace memplan {
namespace {

constexpr const char* kPython = "/usr/bin/python3";

const char* const kPlans[] = {"resnet18_fp16_plan.json", "gpt_bf16_plan.json",
                              "mlp_fp32_sgd_plan.json"};

nlohmann::json LoadPlan(const std::string& name) {
  std::ifstream in(memplan::testing::FixturesDir() + "/plans/" + name);
  REQUIRE(in.good());
  return nlohmann::json::parse(in);
}

std::filesystem::path ScratchDir() {
  std::filesystem::path dir = std::filesystem::temp_directory_path() /
                              ("memplan_export_syntax_" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  return dir;
}

std::filesystem::path WriteFile(const std::filesystem::path& path, const std::string& text) {
  std::ofstream out(path, std::ios::binary);
  out << text;
  REQUIRE(out.good());
  return path;
}

int Run(const std::string& command) { return std::system((command + " >/dev/null 2>&1").c_str()); }

bool HavePython() { return std::filesystem::exists(kPython); }

TEST_CASE("Generated Python compiles with python3 -m py_compile", "[export][python]") {
  if (!HavePython()) {
    WARN("skipped: " << kPython << " not found");
    return;
  }
  std::filesystem::path dir = ScratchDir();
  for (const char* plan_name : kPlans) {
    nlohmann::json plan = LoadPlan(plan_name);
    for (ExportTarget target :
         {ExportTarget::kHfTrainer, ExportTarget::kLightning, ExportTarget::kPytorchLoop}) {
      for (double clip : {1.0, 0.0}) {
        ExportOptions options;
        options.max_grad_norm = clip;
        Expected<std::string> text = ExportConfig(plan, target, options);
        REQUIRE(text.ok());
        std::filesystem::path file = WriteFile(dir / "snippet.py", *text);
        INFO(plan_name << " -> " << ExportTargetName(target) << " clip " << clip << ":\n" << *text);
        CHECK(Run(std::string(kPython) + " -m py_compile " + file.string()) == 0);
      }
    }
  }
  // The check can fail: a syntax error is reported as such.
  std::filesystem::path broken = WriteFile(dir / "broken.py", "args = TrainingArguments(\n");
  CHECK(Run(std::string(kPython) + " -m py_compile " + broken.string()) != 0);
  std::filesystem::remove_all(dir);
}

TEST_CASE("Generated Python for N ranks compiles with python3 -m py_compile", "[export][python]") {
  if (!HavePython()) {
    WARN("skipped: " << kPython << " not found");
    return;
  }
  std::filesystem::path dir = ScratchDir();
  for (const char* strategy : {"ddp", "fsdp", "hybrid-shard", "zero2", "zero3"}) {
    nlohmann::json plan = LoadPlan("gpt_bf16_plan.json");
    plan["plan"]["parallel"] = strategy;
    plan["plan"]["gpus"] = 16;
    plan["plan"]["nodes"] = 2;
    // A ZeRO stage runs DeepSpeed's engine, which keeps fp32 masters.
    const bool zero = std::string(strategy).rfind("zero", 0) == 0;
    plan["plan"]["amp_mode"] = zero ? "master-weights" : "autocast";
    for (ExportTarget target :
         {ExportTarget::kHfTrainer, ExportTarget::kLightning, ExportTarget::kPytorchLoop}) {
      // The PyTorch target's torchrun script runs ddp and FSDP, not DeepSpeed's engine.
      if (zero && target == ExportTarget::kPytorchLoop) continue;
      Expected<std::string> text = ExportConfig(plan, target, ExportOptions{});
      REQUIRE(text.ok());
      std::filesystem::path file = WriteFile(dir / "snippet.py", *text);
      INFO(strategy << " -> " << ExportTargetName(target) << ":\n" << *text);
      CHECK(Run(std::string(kPython) + " -m py_compile " + file.string()) == 0);
    }
  }
  std::filesystem::remove_all(dir);
}

TEST_CASE("Generated accelerate YAML loads with PyYAML as the expected mapping",
          "[export][python]") {
  if (!HavePython() || Run(std::string(kPython) + " -c 'import yaml'") != 0) {
    WARN("skipped: python3-yaml not installed (config_export_test checks the YAML structure)");
    return;
  }
  std::filesystem::path dir = ScratchDir();
  const char* checker =
      "import sys, yaml\n"
      "d = yaml.safe_load(open(sys.argv[1]))\n"
      "assert d == {'compute_environment': 'LOCAL_MACHINE', 'distributed_type': 'NO',\n"
      "             'machine_rank': 0, 'mixed_precision': sys.argv[2], 'num_machines': 1,\n"
      "             'num_processes': 1, 'use_cpu': False}, d\n";
  std::filesystem::path script = WriteFile(dir / "check_yaml.py", checker);
  const std::pair<const char*, const char*> cases[] = {{"resnet18_fp16_plan.json", "fp16"},
                                                       {"gpt_bf16_plan.json", "bf16"},
                                                       {"mlp_fp32_sgd_plan.json", "no"}};
  for (const auto& [plan_name, precision] : cases) {
    Expected<std::string> text = ExportConfig(LoadPlan(plan_name), ExportTarget::kAccelerate, {});
    REQUIRE(text.ok());
    std::filesystem::path file = WriteFile(dir / "accelerate.yaml", *text);
    INFO(*text);
    CHECK(Run(std::string(kPython) + " " + script.string() + " " + file.string() + " " +
              precision) == 0);
  }
  std::filesystem::remove_all(dir);
}

// The YAML documents are written by a library (yaml-cpp), so a value no plain scalar can hold (a
// folder with ": " and " #", which hand-written YAML would cut into a mapping and a comment)
// reads back as written, checked by an independent parser (PyYAML).
TEST_CASE("Generated torchtune YAML keeps an output folder with ': ' and ' #' intact",
          "[export][python]") {
  if (!HavePython() || Run(std::string(kPython) + " -c 'import yaml'") != 0) {
    WARN("skipped: python3-yaml not installed");
    return;
  }
  std::filesystem::path dir = ScratchDir();
  const char* checker =
      "import sys, yaml\n"
      "d = yaml.safe_load(open(sys.argv[1]))\n"
      "assert d['output_dir'] == 'runs/a: b #1', d['output_dir']\n"
      "assert d['batch_size'] == 4 and d['gradient_accumulation_steps'] == 8, d\n"
      "assert d['model']['_component_'] == '?' * 3, d['model']\n";
  std::filesystem::path script = WriteFile(dir / "check_torchtune.py", checker);
  ExportOptions options;
  options.hf_output_dir = "runs/a: b #1";
  Expected<std::string> text =
      ExportConfig(LoadPlan("gpt_bf16_plan.json"), ExportTarget::kTorchtune, options);
  REQUIRE(text.ok());
  std::filesystem::path file = WriteFile(dir / "torchtune.yaml", *text);
  INFO(*text);
  CHECK(Run(std::string(kPython) + " " + script.string() + " " + file.string()) == 0);
  std::filesystem::remove_all(dir);
}

TEST_CASE("Generated JSON parses", "[export]") {
  for (const char* plan_name : kPlans) {
    for (ExportTarget target : {ExportTarget::kDeepSpeed, ExportTarget::kHfTrainerJson}) {
      Expected<std::string> text = ExportConfig(LoadPlan(plan_name), target, {});
      REQUIRE(text.ok());
      CHECK(nlohmann::json::accept(*text));
    }
  }
}

}  // namespace
}  // namespace memplan
