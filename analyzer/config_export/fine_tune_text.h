#pragma once
// The Python every script export writes for a fine-tuning plan, so what runs is what was
// simulated: PEFT's LoraConfig for --lora (rank, lora_alpha, target modules), the loading
// arguments of the frozen base for --base-dtype (bitsandbytes' BitsAndBytesConfig for int8 and
// nf4, torch_dtype for a floating storage) and apply_fine_tuning(model), which refuses a model
// whose frozen base is not stored as planned and adds the adapters. Also the imports the plan's
// optimizer needs (bitsandbytes for its 8-bit, paged and Lion optimizers).
//
// New plan features whose Python is a constant and a step in apply_fine_tuning slot in here.

#include <string>

#include "analyzer/report/plan_report.h"

namespace memplan::config_export {

// Whether the plan changes the model before training (LoRA adapters or a planned base storage):
// then the script calls apply_fine_tuning(model).
bool HasFineTuning(const PlanReport& plan);

// Whether the plan's optimizer is one of bitsandbytes' (its scripts then import bitsandbytes).
bool BitsAndBytesOptimizer(OptimizerKind optimizer);

// Import lines ("import bitsandbytes\n", "from peft import ...\n"), empty when none is needed.
std::string FineTuneImports(const PlanReport& plan);

// LORA_CONFIG, QUANTIZATION_CONFIG, MODEL_LOAD_KWARGS and `def apply_fine_tuning(model)` (each
// only where the plan has it), followed by two blank lines; empty without HasFineTuning.
std::string FineTuneSection(const PlanReport& plan);

// The LoraConfig(...) call of the plan (REQUIRES: plan.lora), on one line.
std::string LoraConfigCall(const PlanReport& plan);

// The BitsAndBytesConfig(...) call of a quantised base (REQUIRES: plan.QuantizedBase()).
std::string BitsAndBytesConfigCall(const PlanReport& plan);

// For the configs that go with a training script (DeepSpeed, Accelerate): one sentence saying
// what the script must build (the LoraConfig and the base's loading arguments) and which export
// writes it; empty without HasFineTuning. `pytorch_export` is that export's command.
std::string FineTuneScriptSentence(const PlanReport& plan, const std::string& pytorch_export);

}  // namespace memplan::config_export
