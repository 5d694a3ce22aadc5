#pragma once
// Floating-point shape arithmetic that divides by zero. An exporter writes `int(seq / n)` as
// Shape -> Cast(float) -> Div -> Cast(int64) feeding a Reshape or Expand. Shape folding keeps
// integer contents only (a Cast to float drops them: float arithmetic is not Dim arithmetic), so a
// float Div or Mod by a constant 0.0 gave no error: its infinite or NaN result reached the Reshape
// as an unknown size, which became a generated symbol the user was then asked to bind. The
// integer case is refused where it is folded (graph/ops/elementwise_ops.cc); this is its float
// counterpart, checked on the imported graph.
//
// A small float tensor (rank <= 1, at most 64 elements) is a shape computation when it is computed
// from integer shape contents (through Cast, arithmetic, Concat, Gather...) with every other
// floating input a known constant, or when it flows into a Cast to an integer type through such
// tensors. A float Div or Mod of a shape computation by a known constant containing 0 (or -0) is
// refused naming the node; so is a Cast to an integer of a known constant that is infinite, NaN
// or beyond int64.

#include "graph/expected.h"
#include "graph/graph.h"

namespace memplan {

// The first such node's error, e.g. "node 'by_zero' (Div): a floating-point division by zero in a
// shape computation (input 1 'zero' is 0): the size it computes would be infinite or NaN".
Status CheckFloatShapeDivisions(const Graph& graph);

}  // namespace memplan
