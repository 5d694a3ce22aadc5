#pragma once
// A fine-tuning plan's changes to the model, applied once after import: which parameters train
// (--train/--freeze, graph/trainable_parameters.h) and LoRA adapters (--lora, --lora-targets,
// graph/lora_adapters.h). How the frozen weights are stored (--base-dtype) is a property of the
// training program, not of the graph (ProgramOptions::base_dtype).

#include <optional>

#include "graph/expected.h"
#include "graph/graph.h"
#include "graph/lora_adapters.h"
#include "graph/trainable_parameters.h"

namespace memplan {

struct FineTuneOptions {
  TrainableSelection selection;
  std::optional<LoraOptions> lora;  // nullopt = no adapters

  bool changes_graph() const { return selection.train || selection.freeze || lora; }
};

// Applies the selection, then the adapters. With LoRA every base parameter is frozen unless
// --train names it (PEFT's modules_to_save); the adapters always train. Errors are one line
// naming the flag.
Status ApplyFineTuning(Graph& graph, const FineTuneOptions& options);

}  // namespace memplan
