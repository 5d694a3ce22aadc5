#pragma once
// Which of torchtune's LoRA switches adapt the linear layers a plan adapted. torchtune's LoRA
// builders (torchtune.models.*.lora_*) take lora_attn_modules, a subset of q_proj, k_proj, v_proj
// and output_proj, plus apply_lora_to_mlp (w1, w2 and w3 of every layer's MLP together) and
// apply_lora_to_output (the LM head). A plan's targets are module paths (plan.lora.target_modules,
// analyzer/report/lora_plan_report.h) ending in the linear layer's attribute name, which the
// exporters keep from the PyTorch module: Hugging Face's q_proj / o_proj / gate_proj, GPT-2's
// c_attn / c_fc, BERT's query / dense, torchtune's own output_proj / w1.

#include <string>
#include <vector>

namespace memplan::config_export {

struct TorchtuneLoraModules {
  std::vector<std::string> attention;  // lora_attn_modules, in q, k, v, output order
  bool mlp = false;                    // apply_lora_to_mlp
  bool partial_mlp = false;            // the plan adapted some MLP projections, not all three
  bool output = false;                 // apply_lora_to_output
  std::vector<std::string> unmapped;   // targets with no switch

  // Whether any switch is on: a LoRA recipe with none would train nothing.
  bool AdaptsAny() const { return !attention.empty() || mlp || output; }
};

// `module_paths`: plan.lora.target_modules ("model.layers.0.self_attn.q_proj").
TorchtuneLoraModules TorchtuneLoraModulesOf(const std::vector<std::string>& module_paths);

}  // namespace memplan::config_export
