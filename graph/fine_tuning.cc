#include "graph/fine_tuning.h"

namespace memplan {

Status ApplyFineTuning(Graph& graph, const FineTuneOptions& options) {
  if (options.selection.train || options.selection.freeze)
    MEMPLAN_RETURN_IF_ERROR(ApplyTrainableSelection(graph, options.selection,
                                                    /*require_trained=*/!options.lora));
  if (options.lora) {
    LoraOptions lora = *options.lora;
    lora.freeze_base = !options.selection.train;
    MEMPLAN_RETURN_IF_ERROR(InsertLoraAdapters(graph, lora));
  }
  return OkStatus();
}

}  // namespace memplan
