#include "analyzer/config_export/saved_plan_reader.h"

#include <algorithm>
#include <cctype>
#include <limits>
#include <optional>
#include <utility>

#include "analyzer/config_export/plan_json_fields.h"
#include "analyzer/simulation/allocator_config.h"
#include "analyzer/vocabulary/fusion_set_names.h"

namespace memplan {
namespace {

std::string Lower(std::string text) {
  std::transform(text.begin(), text.end(), text.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return text;
}

// A field's problem; the verb reading the plan adds its context (ReadExportPlan, verify).
Error PlanError(const std::string& what) { return MakeError(what); }

// The vocabulary's names, case-insensitive: plan files may come from other tools.
Expected<Precision> PlanPrecision(const std::string& text) {
  Expected<Precision> precision = ParsePrecision(Lower(text));
  if (precision.ok()) return precision;
  return PlanError("unknown plan.precision '" + text + "' (expected " +
                   JoinNames(kPrecisionNames, ", ", " or ") + ")");
}

// The vocabulary's names, case-insensitive, plus the spellings other tools use for SGD with
// momentum.
Expected<OptimizerKind> PlanOptimizer(const std::string& text) {
  std::string o = Lower(text);
  if (o == "sgd-momentum" || o == "sgd_momentum") return OptimizerKind::kMomentum;
  Expected<OptimizerKind> optimizer = ParseOptimizerKind(o);
  if (optimizer.ok()) return optimizer;
  return PlanError("unknown plan.optimizer '" + text + "' (expected " +
                   JoinNames(kOptimizerKindNames, ", ", " or ") + ")");
}

Expected<ZeroGradMode> ParseZeroGrad(const nlohmann::json& plan) {
  MEMPLAN_TRY(std::optional<std::string> text, OptionalPlanString(plan, "zero_grad", "plan."));
  if (!text) return ZeroGradMode::kSetToNone;
  std::string z = Lower(*text);
  if (z == "none" || z == "set_to_none") return ZeroGradMode::kSetToNone;
  if (z == "zero" || z == "zeros") return ZeroGradMode::kZero;
  return PlanError("unknown plan.zero_grad '" + *text + "' (expected none/set_to_none or zero)");
}

// plan.lora (docs/json_schema.md); nullopt when absent or null.
Expected<std::optional<LoraPlanReport>> ReadLora(const nlohmann::json& plan) {
  auto lora = plan.find("lora");
  if (lora == plan.end() || lora->is_null()) return std::optional<LoraPlanReport>();
  if (!lora->is_object()) return PlanError("plan.lora is not an object");
  LoraPlanReport result;
  MEMPLAN_TRY(result.rank, RequiredPlanPositiveInt(*lora, "rank", "plan.lora."));
  result.alpha = result.rank;
  auto alpha = lora->find("alpha");
  if (alpha != lora->end() && !alpha->is_null()) {
    if (!alpha->is_number_integer() || alpha->get<int64_t>() < 1)
      return PlanError("plan.lora.alpha is not an integer >= 1");
    result.alpha = alpha->get<int64_t>();
  }
  auto dropout = lora->find("dropout");
  if (dropout != lora->end() && !dropout->is_null()) {
    if (!dropout->is_number() || dropout->get<double>() < 0 || dropout->get<double>() >= 1)
      return PlanError("plan.lora.dropout is not a number in [0, 1)");
    result.dropout = dropout->get<double>();
  }
  MEMPLAN_TRY(result.target_modules, OptionalPlanStringList(*lora, "target_modules", "plan.lora."));
  if (result.target_modules.empty()) return PlanError("plan.lora.target_modules is empty");
  MEMPLAN_TRY(result.peft_target_modules,
              OptionalPlanStringList(*lora, "peft_target_modules", "plan.lora."));
  if (result.peft_target_modules.empty()) result.peft_target_modules = result.target_modules;
  return std::optional<LoraPlanReport>(std::move(result));
}

// A non-negative integer key; absent or null = 0.
Expected<int64_t> OptionalCount(const nlohmann::json& object, const char* key,
                                const std::string& where) {
  auto it = object.find(key);
  if (it == object.end() || it->is_null()) return int64_t{0};
  if (!it->is_number_integer() || it->get<int64_t>() < 0)
    return PlanError(where + key + " is not an integer >= 0");
  return it->get<int64_t>();
}

// plan.recompute_op_types: an object of node name -> op type (absent: empty).
Expected<std::map<std::string, std::string>> ReadRecomputeOpTypes(const nlohmann::json& plan) {
  std::map<std::string, std::string> types;
  auto it = plan.find("recompute_op_types");
  if (it == plan.end() || it->is_null()) return types;
  if (!it->is_object())
    return PlanError("'plan.recompute_op_types' is not an object of node: op type");
  for (const auto& [node, type] : it->items()) {
    if (!type.is_string())
      return PlanError("'plan.recompute_op_types." + node + "' is not a string");
    types[node] = type.get<std::string>();
  }
  return types;
}

// plan.loss_terms: each {"output": name, "loss": kind}, in order.
Status ReadLossTerms(const nlohmann::json& plan, PlanReport& result) {
  auto terms = plan.find("loss_terms");
  if (terms == plan.end() || terms->is_null()) return OkStatus();
  if (!terms->is_array())
    return PlanError("'plan.loss_terms' must be a list of {output, loss} objects");
  for (const nlohmann::json& term : *terms) {
    if (!term.is_object() || !term.contains("output") || !term["output"].is_string() ||
        !term.contains("loss") || !term["loss"].is_string())
      return PlanError(R"(each of 'plan.loss_terms' must be {"output": name, "loss": kind})");
    MEMPLAN_TRY(LossKind kind, ParseLossKind(term["loss"].get<std::string>()));
    result.loss_outputs.push_back(term["output"].get<std::string>());
    result.output_losses.push_back(kind);
  }
  return OkStatus();
}

// What only verify runs: the attention rewrite, the loss, its scaling, the placement by node
// name and the saved bindings.
Status ReadVerifyFields(const nlohmann::json& document, const nlohmann::json& plan,
                        PlanReport& result) {
  auto attention = plan.find("attention");
  if (attention != plan.end() && attention->is_object()) {
    MEMPLAN_TRY(std::optional<std::string> requested,
                OptionalPlanString(*attention, "requested", "plan.attention."));
    MEMPLAN_TRY(result.attention, ParseAttentionMode(requested.value_or("eager")));
  }
  MEMPLAN_TRY(std::optional<std::string> loss, OptionalPlanString(plan, "loss", "plan."));
  MEMPLAN_TRY(result.loss, ParseLossKind(loss.value_or("auto")));
  MEMPLAN_RETURN_IF_ERROR(ReadLossTerms(plan, result));
  MEMPLAN_TRY(std::optional<std::string> scaling,
              OptionalPlanString(plan, "loss_scaling", "plan."));
  if (scaling) {
    auto mode = std::find_if(kLossScalingModeNames.begin(), kLossScalingModeNames.end(),
                             [&](const auto& named) { return named.name == *scaling; });
    if (mode == kLossScalingModeNames.end())
      return PlanError("'plan.loss_scaling' must be none, static or dynamic, got '" + *scaling +
                       "'");
    result.loss_scaling = mode->value;
  }
  MEMPLAN_TRY(result.fp16_nodes, OptionalPlanStringList(plan, "fp16_ops", "plan."));
  MEMPLAN_TRY(result.fp32_nodes, OptionalPlanStringList(plan, "fp32_ops", "plan."));
  MEMPLAN_TRY(result.bindings, PlanBindingsOf(document));
  return OkStatus();
}

// model.path, model.name and model.parameter_count (all optional).
Status ReadModel(const nlohmann::json& document, PlanReport& result) {
  auto model = document.find("model");
  if (model == document.end() || !model->is_object()) return OkStatus();
  MEMPLAN_TRY(auto path, OptionalPlanString(*model, "path", "model."));
  MEMPLAN_TRY(auto name, OptionalPlanString(*model, "name", "model."));
  result.model_path = path.value_or("");
  result.model_name = name.value_or("");
  MEMPLAN_TRY(result.parameter_count, OptionalCount(*model, "parameter_count", "model."));
  return OkStatus();
}

// The batch, the precision regime and the optimizer step: micro_batch .. clip_gradients.
Status ReadBatchAndRegime(const nlohmann::json& plan, PlanReport& result) {
  MEMPLAN_TRY(result.micro_batch, RequiredPlanPositiveInt(plan, "micro_batch", "plan."));
  MEMPLAN_TRY(result.accumulation_steps,
              RequiredPlanPositiveInt(plan, "accumulation_steps", "plan."));
  if (result.micro_batch > std::numeric_limits<int64_t>::max() / result.accumulation_steps)
    return PlanError("plan.micro_batch * plan.accumulation_steps overflows");
  MEMPLAN_TRY(std::string precision, RequiredPlanString(plan, "precision", "plan."));
  MEMPLAN_TRY(result.precision, PlanPrecision(precision));
  // The scale verify runs with (static, or the dynamic start); one no float32 scaler holds (0, -0,
  // beyond 3.4e38) is no plan to run or export.
  MEMPLAN_TRY(result.loss_scale, OptionalPlanLossScale(plan));
  MEMPLAN_TRY(std::optional<std::string> amp_mode, OptionalPlanString(plan, "amp_mode", "plan."));
  if (amp_mode && result.precision != Precision::kFp32) {
    Expected<AmpMode> parsed = ParseAmpMode(*amp_mode);
    if (!parsed.ok()) return PlanError("plan.amp_mode: " + parsed.error().message);
    result.amp_mode = *parsed;
  }
  MEMPLAN_TRY(std::string optimizer, RequiredPlanString(plan, "optimizer", "plan."));
  MEMPLAN_TRY(result.optimizer, PlanOptimizer(optimizer));
  MEMPLAN_TRY(std::optional<std::string> optimizer_impl,
              OptionalPlanString(plan, "optimizer_impl", "plan."));
  if (optimizer_impl && HasTorchOptimizerImpls(result.optimizer)) {
    Expected<OptimizerImpl> parsed = ParseOptimizerImpl(*optimizer_impl);
    if (!parsed.ok()) return PlanError("plan.optimizer_impl: " + parsed.error().message);
    result.optimizer_impl = *parsed;
  }
  MEMPLAN_TRY(result.zero_grad, ParseZeroGrad(plan));
  MEMPLAN_TRY(result.clip_gradients, OptionalPlanBool(plan, "clip_gradients", "plan."));
  return OkStatus();
}

// plan.loss_dtype as the writer names it (recipe_report.cc): "fp32", "bf16", "fp16"; another
// name, or none, reads as not given.
Expected<DType> ReadLossDType(const nlohmann::json& plan) {
  MEMPLAN_TRY(std::optional<std::string> name, OptionalPlanString(plan, "loss_dtype", "plan."));
  if (name == "fp32") return DType::kFloat32;
  if (name == "bf16") return DType::kBFloat16;
  if (name == "fp16") return DType::kFloat16;
  return DType::kUndefined;
}

// The recipe switches: fused_loss .. trainable_parameter_count.
Status ReadRecipeSwitches(const nlohmann::json& plan, PlanReport& result) {
  MEMPLAN_TRY(std::optional<bool> fused_loss, OptionalPlanBool(plan, "fused_loss", "plan."));
  result.fused_loss = fused_loss.value_or(false);
  MEMPLAN_TRY(std::optional<bool> in_backward,
              OptionalPlanBool(plan, "optimizer_in_backward", "plan."));
  result.optimizer_in_backward = in_backward.value_or(false);
  MEMPLAN_TRY(std::optional<bool> reentrant,
              OptionalPlanBool(plan, "recompute_reentrant", "plan."));
  result.recompute_reentrant = reentrant.value_or(false);
  MEMPLAN_TRY(std::optional<std::string> alloc_conf,
              OptionalPlanString(plan, "alloc_conf", "plan."));
  if (alloc_conf) {
    // Written by `analyze` from a parsed configuration; re-parsed so a hand-edited plan cannot put
    // anything but allocator options into the generated scripts.
    Expected<AllocatorConfig> parsed = ParseAllocatorConfig(*alloc_conf);
    if (!parsed.ok()) return PlanError("plan.alloc_conf: " + parsed.error().message);
    result.alloc_conf = AllocatorConfigString(*parsed);
  }
  MEMPLAN_TRY(std::optional<std::string> fusions, OptionalPlanString(plan, "fusions", "plan."));
  if (fusions) {
    std::optional<FusionSet> set = FindName(kFusionSetNames, *fusions);
    if (!set)
      return PlanError("unknown plan.fusions '" + *fusions + "' (expected " +
                       JoinNames(kFusionSetNames) + ")");
    result.fusions = *set;
  }
  MEMPLAN_TRY(result.loss_dtype, ReadLossDType(plan));
  MEMPLAN_TRY(result.loss_chunks, OptionalCount(plan, "loss_chunks", "plan."));
  MEMPLAN_TRY(std::optional<bool> compile, OptionalPlanBool(plan, "compile", "plan."));
  result.compile = compile.value_or(false);
  MEMPLAN_TRY(result.trainable_parameter_count,
              OptionalCount(plan, "trainable_parameter_count", "plan."));
  return OkStatus();
}

// What backward re-runs: plan.recompute .. plan.checkpointable_modules, grouped by module.
Status ReadRecompute(const nlohmann::json& plan, PlanReport& result) {
  MEMPLAN_TRY(result.recompute_nodes, OptionalPlanStringList(plan, "recompute", "plan."));
  MEMPLAN_TRY(result.recompute_op_types, ReadRecomputeOpTypes(plan));
  MEMPLAN_TRY(std::optional<std::string> unit, OptionalPlanString(plan, "recompute_unit", "plan."));
  if (unit) {
    Expected<RecomputeUnit> parsed = ParseRecomputeUnit(Lower(*unit));
    if (!parsed.ok() || *parsed == RecomputeUnit::kAuto)
      return PlanError("plan.recompute_unit: expected node or module, got '" + *unit + "'");
    result.recompute_unit = *parsed;
  }
  MEMPLAN_TRY(result.recompute_modules, OptionalPlanStringList(plan, "recompute_modules", "plan."));
  if (!result.recompute_modules.empty() && !result.ModuleUnit())
    return PlanError("plan.recompute_modules is given, but plan.recompute_unit is not \"module\"");
  auto total = plan.find("checkpointable_modules");
  if (total != plan.end() && !total->is_null()) {
    if (!total->is_number_integer() || total->get<int64_t>() < 0)
      return PlanError("plan.checkpointable_modules is not an integer >= 0");
    result.checkpointable_modules = total->get<int64_t>();
  }
  result.checkpoints = CheckpointsOf(result);
  return OkStatus();
}

// --offload (docs/json_schema.md): plan.offload is an object whose mode names it.
Status ReadOffload(const nlohmann::json& plan, PlanReport& result) {
  auto offload = plan.find("offload");
  if (offload == plan.end() || offload->is_null()) return OkStatus();
  if (!offload->is_object()) return PlanError("plan.offload is not an object");
  MEMPLAN_TRY(std::string mode, RequiredPlanString(*offload, "mode", "plan.offload."));
  Expected<OffloadMode> parsed = ParseOffloadMode(Lower(mode));
  if (!parsed.ok()) return PlanError("plan.offload.mode: " + parsed.error().message);
  result.offload = *parsed;
  MEMPLAN_TRY(std::optional<std::string> hooks,
              OptionalPlanString(*offload, "hooks", "plan.offload."));
  if (hooks) {
    Expected<OffloadHooks> named = ParseOffloadHooks(Lower(*hooks));
    if (!named.ok()) return PlanError("plan.offload.hooks: " + named.error().message);
    result.offload_hooks = *named;
  }
  return OkStatus();
}

// Where the plan runs: data parallel (docs/multi_gpu.md: plan.parallel names the strategy,
// plan.gpus the ranks), tensor parallel and host offload.
Status ReadParallelAndOffload(const nlohmann::json& plan, PlanReport& result) {
  MEMPLAN_TRY(result.data_parallel, OptionalPlanDataParallel(plan));
  MEMPLAN_TRY(result.tensor_parallel, PlanTensorParallelDegree(plan));
  auto split = plan.find("tensor_parallel");
  if (split != plan.end() && split->is_object()) {
    MEMPLAN_TRY(result.column_parallel,
                OptionalPlanStringList(*split, "column_parallel", "plan.tensor_parallel."));
    MEMPLAN_TRY(result.row_parallel,
                OptionalPlanStringList(*split, "row_parallel", "plan.tensor_parallel."));
  }
  return ReadOffload(plan, result);
}

// Fine-tuning: plan.lora and plan.base_dtype.
Status ReadFineTuning(const nlohmann::json& plan, PlanReport& result) {
  MEMPLAN_TRY(result.lora, ReadLora(plan));
  MEMPLAN_TRY(std::optional<std::string> base_dtype,
              OptionalPlanString(plan, "base_dtype", "plan."));
  if (base_dtype) {
    Expected<BaseDType> parsed = ParseBaseDType(Lower(*base_dtype));
    if (!parsed.ok()) return PlanError("plan.base_dtype: " + parsed.error().message);
    result.base_dtype = *parsed;
  }
  return OkStatus();
}

}  // namespace

// Each part reads its keys in the order the errors name them: the first problem of a plan is the
// one reported.
Expected<PlanReport> ReadSavedPlan(const nlohmann::json& plan_json) {
  MEMPLAN_TRY(const nlohmann::json* plan_object, PlanObjectOf(plan_json));
  const nlohmann::json& plan = *plan_object;
  PlanReport result;
  MEMPLAN_RETURN_IF_ERROR(ReadModel(plan_json, result));
  MEMPLAN_RETURN_IF_ERROR(ReadBatchAndRegime(plan, result));
  MEMPLAN_RETURN_IF_ERROR(ReadRecipeSwitches(plan, result));
  MEMPLAN_RETURN_IF_ERROR(ReadRecompute(plan, result));
  MEMPLAN_RETURN_IF_ERROR(ReadParallelAndOffload(plan, result));
  MEMPLAN_RETURN_IF_ERROR(ReadFineTuning(plan, result));
  MEMPLAN_RETURN_IF_ERROR(ReadVerifyFields(plan_json, plan, result));
  return result;
}

Expected<PlanReport> ReadExportPlan(const nlohmann::json& plan_json) {
  Expected<PlanReport> plan = ReadSavedPlan(plan_json);
  if (!plan.ok())
    return MakeError("cannot export this plan: " + plan.error().message +
                     " (expected the output of `memplan analyze --json`, schema " +
                     kPlanJsonSchema + ")");
  return plan;
}

}  // namespace memplan
