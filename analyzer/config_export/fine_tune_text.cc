#include "analyzer/config_export/fine_tune_text.h"

#include "analyzer/config_export/export_text.h"

namespace memplan::config_export {
namespace {

// The dtype the 4-bit base dequantises to for its matmuls: the plan's half precision, else fp32.
std::string ComputeDtype(const PlanReport& plan) {
  return plan.precision == Precision::kFp32 ? "torch.float32"
                                            : std::string(TorchDtype(plan.precision));
}

std::string PythonList(const std::vector<std::string>& items) {
  std::string out = "[";
  for (size_t i = 0; i < items.size(); ++i) out += (i ? ", " : "") + PythonString(items[i]);
  return out + "]";
}

std::string FloatingBaseDtype(BaseDType base) {
  switch (base) {
    case BaseDType::kBf16:
      return "torch.bfloat16";
    case BaseDType::kFp16:
      return "torch.float16";
    default:
      return "torch.float32";
  }
}

}  // namespace

bool BitsAndBytesOptimizer(OptimizerKind optimizer) {
  return optimizer == OptimizerKind::kAdamW8bit || optimizer == OptimizerKind::kPagedAdamW8bit ||
         optimizer == OptimizerKind::kLion;
}

bool HasFineTuning(const PlanReport& plan) {
  return plan.lora.has_value() || plan.base_dtype.has_value();
}

std::string FineTuneImports(const PlanReport& plan) {
  std::string out;
  if (BitsAndBytesOptimizer(plan.optimizer) || plan.QuantizedBase()) out += "import bitsandbytes\n";
  if (plan.lora) out += "from peft import LoraConfig, get_peft_model\n";
  if (plan.QuantizedBase()) out += "from transformers import BitsAndBytesConfig\n";
  return out;
}

std::string LoraConfigCall(const PlanReport& plan) {
  const LoraPlanReport& lora = *plan.lora;
  return "LoraConfig(r=" + std::to_string(lora.rank) +
         ", lora_alpha=" + std::to_string(lora.alpha) +
         ", lora_dropout=" + PythonFloat(lora.dropout) +
         ", target_modules=" + PythonList(lora.peft_target_modules) + ", bias=\"none\")";
}

std::string BitsAndBytesConfigCall(const PlanReport& plan) {
  if (plan.base_dtype == BaseDType::kInt8) return "BitsAndBytesConfig(load_in_8bit=True)";
  // memplan sizes nf4 as QLoRA stores it: Params4bit, blocksize 64, compress_statistics=True
  // (analyzer/program/frozen_weight_storage.h), which bnb_4bit_use_double_quant selects.
  return "BitsAndBytesConfig(load_in_4bit=True, bnb_4bit_quant_type=\"nf4\", "
         "bnb_4bit_use_double_quant=True, bnb_4bit_compute_dtype=" +
         ComputeDtype(plan) + ")";
}

std::string FineTuneSection(const PlanReport& plan) {
  if (!HasFineTuning(plan)) return "";
  std::string out;
  if (plan.lora) {
    out += "# LoRA as planned: rank " + std::to_string(plan.lora->rank) + ", lora_alpha " +
           std::to_string(plan.lora->alpha) + ", adapters on " +
           std::to_string(plan.lora->target_modules.size()) +
           (plan.lora->target_modules.size() == 1 ? " module" : " modules") +
           " (PEFT matches each name\n"
           "# against a module's name or its last part); every base parameter frozen.\n";
    out += "LORA_CONFIG = " + LoraConfigCall(plan) + "\n";
    out += "LORA_TARGET_MODULE_COUNT = " + std::to_string(plan.lora->target_modules.size()) + "\n";
  }
  if (plan.base_dtype) {
    const std::string base(BaseDTypeName(*plan.base_dtype));
    out += "# The frozen base weights are stored in " + base +
           " as planned: load the model with\n"
           "#   AutoModel...from_pretrained(NAME, **MODEL_LOAD_KWARGS)\n";
    if (plan.QuantizedBase()) {
      out += "QUANTIZATION_CONFIG = " + BitsAndBytesConfigCall(plan) + "\n";
      out += "MODEL_LOAD_KWARGS = {\"quantization_config\": QUANTIZATION_CONFIG}\n";
    } else {
      out += "MODEL_LOAD_KWARGS = {\"torch_dtype\": " + FloatingBaseDtype(*plan.base_dtype) + "}\n";
    }
  }
  out += "\n\n";
  out += "def apply_fine_tuning(model):\n";
  out += "    \"\"\"Refuses a model whose frozen base is not stored as planned, then adds the\n";
  out += "    planned adapters.\"\"\"\n";
  if (plan.base_dtype == BaseDType::kNf4 || plan.base_dtype == BaseDType::kInt8) {
    const std::string layer = plan.base_dtype == BaseDType::kNf4 ? "bitsandbytes.nn.Linear4bit"
                                                                 : "bitsandbytes.nn.Linear8bitLt";
    out += "    if not any(isinstance(m, " + layer + ") for m in model.modules()):\n";
    out += "        raise ValueError(\"the plan stores the frozen base in " +
           std::string(BaseDTypeName(*plan.base_dtype)) +
           ": load the model with **MODEL_LOAD_KWARGS\")\n";
  } else if (plan.base_dtype) {
    out += "    wrong = [n for n, p in model.named_parameters() if p.is_floating_point() and\n";
    out += "             p.dtype != MODEL_LOAD_KWARGS[\"torch_dtype\"]]\n";
    out += "    if wrong:\n";
    out += "        raise ValueError(f\"the plan stores the frozen base in " +
           std::string(BaseDTypeName(*plan.base_dtype)) +
           "; {wrong[0]} is not: load the model with **MODEL_LOAD_KWARGS\")\n";
  }
  if (plan.lora) {
    out += "    model = get_peft_model(model, LORA_CONFIG)\n";
    out += "    adapted = {n.rsplit(\".lora_A\", 1)[0] for n, _ in model.named_modules()\n";
    out += "               if n.endswith(\".lora_A\")}\n";
    out += "    if len(adapted) != LORA_TARGET_MODULE_COUNT:\n";
    out += "        raise ValueError(f\"LORA_CONFIG adapted {len(adapted)} modules; the plan \"\n";
    out += "                         f\"simulated {LORA_TARGET_MODULE_COUNT}\")\n";
  }
  out += "    return model\n\n\n";
  return out;
}

std::string FineTuneScriptSentence(const PlanReport& plan, const std::string& pytorch_export) {
  if (!HasFineTuning(plan)) return "";
  std::string what;
  if (plan.lora) what = "LoRA adapters " + LoraConfigCall(plan);
  if (plan.base_dtype) {
    what += std::string(what.empty() ? "" : " on ") + "a frozen base stored in " +
            std::string(BaseDTypeName(*plan.base_dtype));
    if (plan.QuantizedBase())
      what += " (from_pretrained(..., quantization_config=" + BitsAndBytesConfigCall(plan) + "))";
  }
  return "fine-tuning: the plan trains " + what +
         "; this config cannot build the model, the training script must (" + pytorch_export +
         " writes apply_fine_tuning(model)). Without it every parameter trains and the run "
         "needs more memory than planned.";
}

}  // namespace memplan::config_export
