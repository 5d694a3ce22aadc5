#pragma once
// What a rewritten graph keeps of the model it was rebuilt from: the file-level facts (IR version,
// opsets, producer, name, import warnings) and the symbols its shapes are written in. The rewrites
// that rebuild a Graph node by node (attention fusion, the fused loss, LoRA adapters) copy them
// here, so a new fact of Graph is carried by all of them at once.

#include <optional>

#include "graph/graph.h"

namespace memplan {

inline void CopyModelFacts(const Graph& from, Graph& to) {
  to.ir_version = from.ir_version;
  to.opset_imports = from.opset_imports;
  to.producer_name = from.producer_name;
  to.graph_name = from.graph_name;
  to.warnings = from.warnings;
  to.symbols() = from.symbols();
  if (std::optional<SymbolId> batch = from.batch_symbol()) to.set_batch_symbol(*batch);
}

}  // namespace memplan
