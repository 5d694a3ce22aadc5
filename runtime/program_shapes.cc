#include "runtime/program_shapes.h"

#include <string>

namespace memplan {

Expected<TensorShape> EvaluateShape(const Shape& shape, const Bindings& bindings) {
  if (!shape.known) return MakeError("a shape is unknown");
  TensorShape out;
  out.reserve(shape.dims.size());
  for (const Dim& d : shape.dims) {
    MEMPLAN_TRY(int64_t v, d.Evaluate(bindings));
    if (v < 0) return MakeError("a dimension evaluates to " + std::to_string(v));
    out.push_back(v);
  }
  return out;
}

Bindings WithBatch(const Bindings& bindings, std::optional<SymbolId> batch_symbol, int64_t batch) {
  Bindings out = bindings;
  if (batch_symbol) out.Bind(*batch_symbol, batch);
  return out;
}

}  // namespace memplan
