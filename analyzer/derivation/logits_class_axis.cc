#include "analyzer/derivation/logits_class_axis.h"

#include <algorithm>
#include <vector>

#include "graph/ops/op_registry.h"

namespace memplan {
namespace {

// Each step goes one node back; a longer chain of axis-keeping ops than this is not a head.
constexpr int kMaxSteps = 32;

std::optional<size_t> NormalisedAxis(int64_t axis, size_t rank) {
  const auto r = static_cast<int64_t>(rank);
  if (axis < 0) axis += r;
  if (axis < 0 || axis >= r) return std::nullopt;
  return static_cast<size_t>(axis);
}

}  // namespace

std::optional<size_t> TraceClassAxis(const Graph& graph, const OpRegistry& registry,
                                     ValueId output) {
  // Walking back from the output, `perm_to_output[a]` is where axis a of the current value
  // ends up in the output (the composition of the Transposes passed).
  ValueId v = output;
  const Shape& out_shape = graph.value(output).shape;
  if (!out_shape.known) return std::nullopt;
  std::vector<size_t> to_output(out_shape.rank());
  for (size_t a = 0; a < to_output.size(); ++a) to_output[a] = a;
  for (int step = 0; step < kMaxSteps; ++step) {
    const Value& value = graph.value(v);
    if (!value.producer.valid() || !value.shape.known || value.shape.rank() != to_output.size())
      return std::nullopt;
    const Node& node = graph.node(value.producer);
    const size_t rank = value.shape.rank();
    const auto here = [&](std::optional<size_t> axis) -> std::optional<size_t> {
      if (!axis) return std::nullopt;
      return to_output[*axis];
    };
    const OpSchema& schema = registry.FindOrUnknown(node.op_type, node.domain);
    if (schema.normalises_over_axis)
      return here(NormalisedAxis(node.attributes.GetInt("axis", -1), rank));
    if (schema.is_linear_layer)
      return here(schema.channel_bias_input >= 0 ? std::optional<size_t>(1) : rank - 1);
    if (schema.permutes_axes) {
      if (node.inputs.empty() || !node.inputs[0].valid()) return std::nullopt;
      std::vector<int64_t> perm = node.attributes.GetInts("perm");
      if (perm.empty())
        for (size_t a = rank; a > 0; --a) perm.push_back(static_cast<int64_t>(a - 1));
      if (perm.size() != rank) return std::nullopt;
      // Output axis i is input axis perm[i]: input axis perm[i] ends where output axis i does.
      std::vector<size_t> next(rank);
      for (size_t i = 0; i < rank; ++i) {
        const std::optional<size_t> from = NormalisedAxis(perm[i], rank);
        if (!from) return std::nullopt;
        next[*from] = to_output[i];
      }
      to_output = std::move(next);
      v = node.inputs[0];
      continue;
    }
    const auto same_shape = std::find_if(node.inputs.begin(), node.inputs.end(), [&](ValueId u) {
      return u.valid() && graph.value(u).shape == value.shape;
    });
    if (same_shape == node.inputs.end()) return std::nullopt;
    v = *same_shape;
  }
  return std::nullopt;
}

}  // namespace memplan
