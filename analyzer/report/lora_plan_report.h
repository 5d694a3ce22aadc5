#pragma once
// The LoRA adapters of a fine-tuning plan (--lora, graph/lora_adapters.h) as a training script
// must recreate them: the rank, PEFT's lora_alpha (memplan inserts scaling 1, alpha = r) and
// the PyTorch modules adapted. Read back from the rewritten graph, so the report names exactly
// the adapters that were simulated (`plan.lora` in docs/json_schema.md).
//
// A module's path is its weight's name without ".weight" ("model.layers.0.self_attn.q_proj"),
// or, where the exporter renamed the weight ("onnx::MatMul_123"), the innermost module scope of
// the node computing x W ("/model/layers.0/self_attn/q_proj/MatMul").

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>
#include "graph/graph.h"

namespace memplan {

struct LoraPlanReport {
  int64_t rank = 0;
  int64_t alpha = 0;     // PEFT lora_alpha: the adapters' update is scaled by alpha / rank
  double dropout = 0.0;  // PEFT lora_dropout: the graph inserts none
  // Every adapted module, in graph order. Empty entries never: an adapter whose module cannot be
  // named is listed by its weight name.
  std::vector<std::string> target_modules;
  // What to write as LoraConfig(target_modules=...): the modules' last names ("q_proj") when
  // PEFT's suffix match on them selects exactly target_modules among the model's linear layers,
  // else target_modules itself.
  std::vector<std::string> peft_target_modules;
};

// nullopt when the graph has no LoRA adapters.
std::optional<LoraPlanReport> LoraPlanReportOf(const Graph& graph);

// {"rank", "alpha", "dropout", "target_modules", "peft_target_modules"}.
nlohmann::ordered_json LoraPlanReportJson(const LoraPlanReport& lora);

}  // namespace memplan
