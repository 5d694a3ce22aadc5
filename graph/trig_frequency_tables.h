#pragma once
// Rotary and sinusoidal frequency tables in an export without a graph signature. A rotary
// embedding's `inv_freq` (transformers' *RotaryEmbedding classes, torchtune's
// RotaryPositionalEmbeddings, ESM's) is a registered buffer: torch never gives it a gradient. The
// TorchScript exporter stores it as an initializer like any weight, and the gradient reaches it
// through the angles' Sin and Cos, so it would be planned as trained: its gradient, its optimizer
// state, and every rotary product's saved operands for the angle's gradient (ESM +16% of saved
// bytes).
//
// The rule: a floating initializer whose every use ends in Sin or Cos, reached only through
// movement ops (Cast, Unsqueeze, Squeeze, Reshape, Expand, Transpose, Flatten, Slice, Tile,
// Identity, Concat) and products (Mul, MatMul, Einsum, Div) whose other operands are constants at
// import (positions from arange over a shape, literals): angles = positions x frequencies. A
// trained periodic feature such as Time2Vec's sin(w * t + b) multiplies the weight with the
// data, so it does not match; frequencies trained against fixed positions would, and the import
// warning names what it leaves untrained.

#include <string>
#include <vector>

#include "graph/graph.h"

namespace memplan {

// Marks such initializers untrained (Value::trainable = false) and returns their names.
std::vector<std::string> UntrainTrigFrequencyTables(Graph& graph);

}  // namespace memplan
