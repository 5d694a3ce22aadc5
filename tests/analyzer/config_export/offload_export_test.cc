// --offload in `memplan export` (analyzer/config_export/): the engine setting each target writes
// for the plan's offload mode, the notes where a config cannot carry it, and the refusals where a
// target cannot run it. Plans are the hand-written ones in tests/fixtures/plans/ with
// plan.offload added, as `memplan analyze --offload ... --json` writes it.

#include <catch2/catch.hpp>

#include <fstream>
#include <string>

#include <nlohmann/json.hpp>
#include "analyzer/config_export/export_config.h"
#include "analyzer/config_export/saved_plan_reader.h"
#include "tests/require_value.h"
#include "tests/test_paths.h"

namespace memplan {
namespace {

// mlp_fp32_sgd_plan.json (fp32, SGD with momentum, 16 x 1, one GPU) with plan.offload.mode.
nlohmann::json MlpPlan(const std::string& offload) {
  std::ifstream in(memplan::testing::FixturesDir() + "/plans/mlp_fp32_sgd_plan.json");
  REQUIRE(in.good());
  nlohmann::json plan = nlohmann::json::parse(in);
  plan["plan"]["offload"] = {{"mode", offload}, {"host_bytes", 16000}};
  return plan;
}

ExportOptions WithMomentum() {
  ExportOptions options;
  options.sgd_momentum = 0.9;
  return options;
}

std::string Export(const nlohmann::json& plan, ExportTarget target) {
  return testing::RequireValue(ExportConfig(plan, target, WithMomentum()));
}

std::string Refusal(const nlohmann::json& plan, ExportTarget target) {
  return testing::RequireError(ExportConfig(plan, target, WithMomentum()));
}

TEST_CASE("plan.offload.mode is read back, absent means none", "[export][offload]") {
  Expected<PlanReport> none = ReadExportPlan(MlpPlan("none"));
  REQUIRE(none.ok());
  CHECK(none->offload == OffloadMode::kNone);
  Expected<PlanReport> params = ReadExportPlan(MlpPlan("optimizer+params"));
  REQUIRE(params.ok());
  CHECK(params->offload == OffloadMode::kOptimizerAndParams);
  nlohmann::json bad = MlpPlan("nvme");
  Expected<PlanReport> unknown = ReadExportPlan(bad);
  REQUIRE_FALSE(unknown.ok());
  CHECK(unknown.error().message.find("plan.offload.mode: unknown offload mode 'nvme'") !=
        std::string::npos);
  bad["plan"]["offload"] = "optimizer";
  REQUIRE_FALSE(ReadExportPlan(bad).ok());
}

TEST_CASE("DeepSpeed: ZeRO-Offload on one GPU is stage 2, parameters too stage 3",
          "[export][offload]") {
  nlohmann::json optimizer =
      nlohmann::json::parse(Export(MlpPlan("optimizer"), ExportTarget::kDeepSpeed));
  // offload_optimizer is a zero_optimization key, so one GPU runs ZeRO stage 2; the reduce
  // buckets the single-GPU plan does not hold are off.
  CHECK(optimizer["zero_optimization"] == nlohmann::json::parse(R"({
      "stage": 2,
      "offload_optimizer": {"device": "cpu", "pin_memory": true},
      "contiguous_gradients": false,
      "overlap_comm": false})"));
  CHECK(optimizer["train_batch_size"] == 16);
  CHECK(optimizer["_comment"].get<std::string>().find("ZeRO stage 2 with the optimizer step on "
                                                      "the CPU") != std::string::npos);

  nlohmann::json params =
      nlohmann::json::parse(Export(MlpPlan("optimizer+params"), ExportTarget::kDeepSpeed));
  CHECK(params["zero_optimization"] == nlohmann::json::parse(R"({
      "stage": 3,
      "offload_optimizer": {"device": "cpu", "pin_memory": true},
      "offload_param": {"device": "cpu", "pin_memory": true},
      "contiguous_gradients": false,
      "overlap_comm": false,
      "stage3_param_persistence_threshold": 0,
      "stage3_max_reuse_distance": 0})"));

  // Activations are the training script's: no zero section, a note naming the line to add.
  nlohmann::json activations =
      nlohmann::json::parse(Export(MlpPlan("activations"), ExportTarget::kDeepSpeed));
  CHECK_FALSE(activations.contains("zero_optimization"));
  bool noted = false;
  for (const auto& note : activations["_not_expressed"])
    noted = noted || note.get<std::string>().find(
                         "torch.autograd.graph.save_on_cpu(pin_memory=True)") != std::string::npos;
  CHECK(noted);
  // Without offload a one-GPU config has no zero section at all (unchanged).
  CHECK_FALSE(nlohmann::json::parse(Export(MlpPlan("none"), ExportTarget::kDeepSpeed))
                  .contains("zero_optimization"));
}

TEST_CASE("Accelerate runs ZeRO-Offload through its DeepSpeed plugin", "[export][offload]") {
  const std::string optimizer = Export(MlpPlan("optimizer"), ExportTarget::kAccelerate);
  CHECK(optimizer.find("deepspeed_config:\n"
                       "  gradient_accumulation_steps: 1\n"
                       "  offload_optimizer_device: cpu\n"
                       "  offload_param_device: none\n"
                       "  zero3_init_flag: false\n"
                       "  zero_stage: 2\n"
                       "distributed_type: DEEPSPEED\n") != std::string::npos);
  CHECK(optimizer.find("num_processes: 1\n") != std::string::npos);
  const std::string params = Export(MlpPlan("optimizer+params"), ExportTarget::kAccelerate);
  CHECK(params.find("  offload_param_device: cpu\n") != std::string::npos);
  CHECK(params.find("  zero_stage: 3\n") != std::string::npos);
  const std::string activations = Export(MlpPlan("activations"), ExportTarget::kAccelerate);
  CHECK(activations.find("distributed_type: 'NO'\n") != std::string::npos);
  CHECK(activations.find("#   with torch.autograd.graph.save_on_cpu(pin_memory=True):\n") !=
        std::string::npos);
  // A mixed plan under autocast is not what the plugin runs (DeepSpeed keeps fp32 masters).
  nlohmann::json plan = MlpPlan("optimizer");
  plan["plan"]["precision"] = "bf16";
  plan["plan"]["amp_mode"] = "autocast";
  CHECK(Refusal(plan, ExportTarget::kAccelerate) ==
        "export: accelerate with --offload optimizer (its DeepSpeed plugin keeps fp32 masters) "
        "cannot express --amp-mode autocast, which the plan modelled; re-plan with --amp-mode "
        "master-weights");
  plan["plan"]["amp_mode"] = "master-weights";
  CHECK(Export(plan, ExportTarget::kAccelerate).find("mixed_precision: bf16\n") !=
        std::string::npos);
}

TEST_CASE("the PyTorch loop saves activations on the CPU", "[export][offload]") {
  const std::string loop = Export(MlpPlan("activations"), ExportTarget::kPytorchLoop);
  CHECK(loop.find("        with torch.autograd.graph.save_on_cpu(pin_memory=True):\n"
                  "            loss = loss_fn(model(inputs), targets) / ACCUMULATION_STEPS\n") !=
        std::string::npos);
  // Mixed precision: both contexts on one line, save_on_cpu outermost.
  nlohmann::json bf16 = MlpPlan("activations");
  bf16["plan"]["precision"] = "bf16";
  CHECK(Export(bf16, ExportTarget::kPytorchLoop)
            .find("        with torch.autograd.graph.save_on_cpu(pin_memory=True), "
                  "torch.autocast(") != std::string::npos);
  CHECK(Export(MlpPlan("none"), ExportTarget::kPytorchLoop).find("save_on_cpu") ==
        std::string::npos);
}

TEST_CASE("targets that cannot run the offload refuse, naming those that can",
          "[export][offload]") {
  CHECK(Refusal(MlpPlan("optimizer"), ExportTarget::kHfTrainer) ==
        "export: hf-trainer cannot express --offload optimizer, which the plan modelled; export "
        "with --to deepspeed or accelerate");
  CHECK(Refusal(MlpPlan("optimizer+params"), ExportTarget::kPytorchLoop) ==
        "export: pytorch cannot express --offload optimizer+params, which the plan modelled; "
        "export with --to deepspeed or accelerate or torchtune");  // torchtune: fsdp_cpu_offload
  CHECK(Refusal(MlpPlan("optimizer"), ExportTarget::kLightning).find("lightning cannot") !=
        std::string::npos);
  CHECK(Refusal(MlpPlan("activations"), ExportTarget::kHfTrainerJson) ==
        "export: hf-trainer-json cannot express --offload activations, which the plan modelled; "
        "export with --to deepspeed or accelerate or pytorch or torchtune");
}

}  // namespace
}  // namespace memplan
