#include "graph/ops/einsum_rules.h"

#include <algorithm>
#include <cctype>
#include <initializer_list>
#include <map>

#include "graph/ops/shape_helpers.h"

namespace memplan {
namespace {

constexpr char kEllipsis = '.';

// "a...b" -> "a.b"; error on a stray '.', two ellipses or a non-letter.
Expected<std::string> ParseTerm(std::string_view term) {
  std::string out;
  bool has_ellipsis = false;
  for (size_t i = 0; i < term.size(); ++i) {
    char c = term[i];
    if (c == '.') {
      if (term.substr(i, 3) != "..." || has_ellipsis) {
        return MakeError("einsum term '" + std::string(term) + "' has a malformed ellipsis");
      }
      has_ellipsis = true;
      out.push_back(kEllipsis);
      i += 2;
    } else if (std::isalpha(static_cast<unsigned char>(c))) {
      out.push_back(c);
    } else {
      return MakeError("einsum term '" + std::string(term) + "' has an invalid character '" +
                       std::string(1, c) + "'");
    }
  }
  return out;
}

}  // namespace

Expected<EinsumEquation> ParseEinsumEquation(std::string_view equation, size_t num_inputs) {
  std::string eq;
  for (char c : equation)
    if (!std::isspace(static_cast<unsigned char>(c))) eq.push_back(c);
  EinsumEquation parsed;
  size_t arrow = eq.find("->");
  std::string lhs = eq.substr(0, arrow);
  size_t start = 0;
  while (true) {
    size_t comma = lhs.find(',', start);
    MEMPLAN_TRY(std::string term,
                ParseTerm(std::string_view(lhs).substr(
                    start, comma == std::string::npos ? std::string::npos : comma - start)));
    parsed.inputs.push_back(std::move(term));
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  if (parsed.inputs.size() != num_inputs) {
    return MakeError("einsum equation '" + std::string(equation) + "' has " +
                     std::to_string(parsed.inputs.size()) + " operand terms but the node has " +
                     std::to_string(num_inputs) + " inputs");
  }
  if (arrow != std::string::npos) {
    MEMPLAN_TRY(parsed.output, ParseTerm(std::string_view(eq).substr(arrow + 2)));
    return parsed;
  }
  // Implicit output: ellipsis first, then letters used exactly once, alphabetically.
  std::map<char, int> counts;
  bool any_ellipsis = false;
  for (const auto& term : parsed.inputs) {
    for (char c : term) {
      if (c == kEllipsis) {
        any_ellipsis = true;
      } else {
        ++counts[c];
      }
    }
  }
  if (any_ellipsis) parsed.output.push_back(kEllipsis);
  for (const auto& [c, n] : counts)
    if (n == 1) parsed.output.push_back(c);
  return parsed;
}

Expected<EinsumShapes> EinsumOutputShape(const EinsumEquation& equation,
                                         const std::vector<Shape>& inputs) {
  std::map<char, Dim> sizes;
  Shape ellipsis;  // broadcast of every operand's ellipsis dims
  for (size_t i = 0; i < inputs.size(); ++i) {
    const std::string& term = equation.inputs[i];
    const Shape& shape = inputs[i];
    bool has_ellipsis = term.find(kEllipsis) != std::string::npos;
    size_t letters = term.size() - (has_ellipsis ? 1 : 0);
    if (shape.rank() < letters || (!has_ellipsis && shape.rank() != letters)) {
      return MakeError("einsum operand " + std::to_string(i) + " has rank " +
                       std::to_string(shape.rank()) + " but subscripts '" + term + "'");
    }
    size_t ellipsis_rank = shape.rank() - letters;
    size_t dim = 0;
    for (char c : term) {
      if (c == kEllipsis) {
        Shape part;
        part.dims.assign(shape.dims.begin() + static_cast<std::ptrdiff_t>(dim),
                         shape.dims.begin() + static_cast<std::ptrdiff_t>(dim + ellipsis_rank));
        auto merged = BroadcastShapes(ellipsis, part);
        if (!merged) return MakeError("einsum ellipsis dims: " + merged.error().message);
        ellipsis = std::move(*merged);
        dim += ellipsis_rank;
        continue;
      }
      const Dim& d = shape.dims[dim++];
      auto it = sizes.find(c);
      if (it == sizes.end()) {
        sizes.emplace(c, d);
        continue;
      }
      // Same broadcasting rule as numpy: a 1 yields, a symbol yields to a constant.
      Shape a{{it->second}}, b{{d}};
      auto merged = BroadcastShapes(a, b);
      if (!merged) {
        return MakeError("einsum index '" + std::string(1, c) + "': " + merged.error().message);
      }
      it->second = merged->dims[0];
    }
  }
  EinsumShapes result;
  result.iteration_points = ellipsis.NumElements();
  for (const auto& [c, d] : sizes) result.iteration_points *= d;
  for (char c : equation.output) {
    if (c == kEllipsis) {
      result.output.dims.insert(result.output.dims.end(), ellipsis.dims.begin(),
                                ellipsis.dims.end());
      continue;
    }
    auto it = sizes.find(c);
    if (it == sizes.end()) {
      return MakeError("einsum output index '" + std::string(1, c) +
                       "' does not appear in any operand");
    }
    result.output.dims.push_back(it->second);
  }
  return result;
}

std::optional<std::array<EinsumBmmOperand, 2>> EinsumBmmOperands(const EinsumEquation& equation,
                                                                 const std::vector<Shape>& inputs) {
  if (equation.inputs.size() != 2 || inputs.size() != 2) return std::nullopt;
  const std::string& left = equation.inputs[0];
  const std::string& right = equation.inputs[1];
  const std::string& out = equation.output;
  if (out.empty()) return std::nullopt;  // everything contracted: torch's dot of flattened operands
  for (const std::string* term : {&left, &right, &out}) {
    if (term->find(kEllipsis) != std::string::npos) return std::nullopt;
    for (size_t i = 0; i < term->size(); ++i)
      if (term->find((*term)[i], i + 1) != std::string::npos) return std::nullopt;
  }
  for (size_t k = 0; k < 2; ++k)
    if (!inputs[k].known || inputs[k].rank() != equation.inputs[k].size()) return std::nullopt;
  const auto has = [](const std::string& term, char c) {
    return term.find(c) != std::string::npos;
  };
  std::string contracted;
  for (char c : left) {
    if (has(right, c)) {
      if (!(inputs[0].dims[left.find(c)] == inputs[1].dims[right.find(c)])) return std::nullopt;
      if (!has(out, c)) contracted.push_back(c);
    } else if (!has(out, c)) {
      return std::nullopt;  // summed in the left operand alone
    }
  }
  for (char c : right)
    if (!has(left, c) && !has(out, c)) return std::nullopt;  // summed in the right operand alone
  if (contracted.empty())
    return std::nullopt;  // no contraction: torch multiplies (mul saves as is)
  // torch numbers labels A-Z (0-25) then a-z (26-51) and places contracted dims in that order.
  const auto label = [](char c) {
    return std::isupper(static_cast<unsigned char>(c)) ? c - 'A' : 26 + (c - 'a');
  };
  std::sort(contracted.begin(), contracted.end(),
            [&](char a, char b) { return label(a) < label(b); });
  std::string batch, left_kept, right_kept;
  for (char c : out) {
    if (has(left, c) && has(right, c)) {
      batch.push_back(c);
    } else if (has(left, c)) {
      left_kept.push_back(c);
    } else if (has(right, c)) {
      right_kept.push_back(c);
    } else {
      return std::nullopt;  // an output letter no operand has (EinsumOutputShape refuses it)
    }
  }
  const auto layout = [](const std::string& term,
                         std::initializer_list<const std::string*> groups) {
    EinsumBmmOperand operand;
    size_t g = 0;
    for (const std::string* group : groups) {
      for (char c : *group) operand.axes.push_back(term.find(c));
      operand.groups[g++] = group->size();
    }
    return operand;
  };
  return std::array<EinsumBmmOperand, 2>{layout(left, {&batch, &left_kept, &contracted}),
                                         layout(right, {&batch, &contracted, &right_kept})};
}

}  // namespace memplan
