#pragma once
// Einsum equations: parsing ("ij,jk->ik", "...ij,...jk", "bhqd,bhkd->bhqk"), output shapes over
// symbolic dims, and the FLOP count of the contraction.

#include <array>
#include <cstddef>
#include <optional>
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

// How torch runs a two-operand einsum as one bmm (ATen Linear.cpp: einsum aligns each operand to
// [output letters, contracted letters], then sumproduct_pair permutes the first to
// [batch, its kept, contracted] and the second to [batch, contracted, its kept] and reshapes each
// to 3-D; bmm saves those reshapes). `axes` lists the operand's own axes in that order (batch =
// output letters in both operands, in output order; contracted letters in torch's label order,
// A-Z then a-z) and `groups` how many of them fold into each of bmm's three dims. A reshape that
// cannot view the permuted operand copies it, and bmm saves the copy (graph/ops/matmul_ops.cc).
struct EinsumBmmOperand {
  std::vector<size_t> axes;
  std::array<size_t, 3> groups{};
};

// The bmm layout of both operands, or nullopt where torch takes another route or sizes decide
// it: not two operands, an ellipsis, a letter repeated in one term (a diagonal), a letter summed
// in one operand only (torch sums it first), no contracted letter (torch multiplies), no output
// letter (torch flattens both into a dot), or a shared letter whose sizes differ (a broadcast).
std::optional<std::array<EinsumBmmOperand, 2>> EinsumBmmOperands(const EinsumEquation& equation,
                                                                 const std::vector<Shape>& inputs);

}  // namespace memplan
