#pragma once
// Concrete shapes of a program's symbolic ones under bindings.

#include "graph/dim.h"
#include "graph/expected.h"
#include "graph/symbols.h"
#include "runtime/tensor.h"

namespace memplan {

// Every dim evaluated; errors name the unbound symbol or a negative dim. REQUIRES: shape.known.
Expected<TensorShape> EvaluateShape(const Shape& shape, const Bindings& bindings);

// `bindings` with the batch symbol (if any) bound to `batch`.
Bindings WithBatch(const Bindings& bindings, std::optional<SymbolId> batch_symbol, int64_t batch);

}  // namespace memplan
