#pragma once
// Einsum equations: parsing ("ij,jk->ik", "...ij,...jk", "bhqd,bhkd->bhqk"), output shapes over
// symbolic dims, and the FLOP count of the contraction.

#include <string>
#include <string_view>
#include <vector>

#include "graph/dim.h"
#include "graph/expected.h"

namespace memplan {

// One operand's subscripts; '.' stands for the ellipsis (at most one per term).
struct EinsumEquation {
  std::vector<std::string> inputs;
  std::string output;  // explicit after "->", or the implicit numpy order when absent
};

// Parses an equation for `num_inputs` operands. The implicit output (no "->") is the ellipsis
// followed by the letters that appear exactly once, in alphabetical order. Spaces are ignored.
Expected<EinsumEquation> ParseEinsumEquation(std::string_view equation, size_t num_inputs);

struct EinsumShapes {
  Shape output;
  // Product of the sizes of every distinct index (and of the broadcast ellipsis dims): the
  // number of points of the iteration space.
  Dim iteration_points;
};

// Binds subscripts to the operands' dims (an ellipsis takes the dims its letters leave over,
// broadcast right-aligned across operands) and returns the output shape. Errors: rank/subscript
// count mismatch, one letter bound to two different sizes > 1.
Expected<EinsumShapes> EinsumOutputShape(const EinsumEquation& equation,
                                         const std::vector<Shape>& inputs);

}  // namespace memplan
