#include "graph/float_shape_check.h"

#include <cmath>
#include <string>
#include <vector>

#include "graph/integer_dtypes.h"

namespace memplan {
namespace {

// Shape computations are a handful of numbers: a scalar or a short vector.
constexpr int64_t kMaxShapeElements = 64;

bool IsSmallFloat(const Value& v) {
  if (!IsFloating(v.dtype) || !v.shape.known || v.shape.rank() > 1) return false;
  const std::optional<int64_t> n = v.shape.NumElements().constant_value();
  return n && *n <= kMaxShapeElements;
}

bool HasIntegerContents(const Value& v) { return IsInteger(v.dtype) && v.contents.has_value(); }

bool IsCastToInteger(const Graph& graph, const Node& node) {
  if (!node.domain.empty() || (node.op_type != "Cast" && node.op_type != "CastLike")) return false;
  for (ValueId out : node.outputs)
    if (out.valid() && IsInteger(graph.value(out).dtype)) return true;
  return false;
}

// Values computed from integer shape contents, every other floating input a known constant.
std::vector<bool> FromShapes(const Graph& graph, const std::vector<NodeId>& order) {
  std::vector<bool> from(graph.num_values(), false);
  for (NodeId id : order) {
    const Node& node = graph.node(id);
    bool reads_shape = false;
    bool only_known = true;
    for (ValueId in : node.inputs) {
      if (!in.valid()) continue;
      const Value& v = graph.value(in);
      const bool shape = HasIntegerContents(v) || from[in.index()];
      reads_shape = reads_shape || shape;
      if (IsFloating(v.dtype) && !shape && !v.float_values) only_known = false;
    }
    if (!reads_shape || !only_known) continue;
    for (ValueId out : node.outputs)
      if (out.valid() && IsSmallFloat(graph.value(out))) from[out.index()] = true;
  }
  return from;
}

// Small float values that reach a Cast to an integer type through small float values.
std::vector<bool> ToIntegers(const Graph& graph, const std::vector<NodeId>& order) {
  std::vector<bool> to(graph.num_values(), false);
  for (auto it = order.rbegin(); it != order.rend(); ++it) {
    const Node& node = graph.node(*it);
    bool reaches = IsCastToInteger(graph, node);
    for (ValueId out : node.outputs) reaches = reaches || (out.valid() && to[out.index()]);
    if (!reaches) continue;
    for (ValueId in : node.inputs)
      if (in.valid() && IsSmallFloat(graph.value(in))) to[in.index()] = true;
  }
  return to;
}

std::string Where(const Node& node) { return "node '" + node.name + "' (" + node.op_type + "): "; }

bool HasZero(const std::vector<double>& values) {
  for (double v : values)
    if (v == 0.0) return true;  // -0.0 too
  return false;
}

bool HasNonInteger64(const std::vector<double>& values) {
  // 2^63 itself is beyond int64; NaN fails both comparisons.
  for (double v : values)
    if (!(std::fabs(v) < 9.2233720368547758e18)) return true;
  return false;
}

}  // namespace

Status CheckFloatShapeDivisions(const Graph& graph) {
  // Import has refused a cyclic graph; one that slips through is not judged here.
  Expected<std::vector<NodeId>> order = graph.TopologicalOrder();
  if (!order.ok()) return OkStatus();
  const std::vector<bool> from_shapes = FromShapes(graph, *order);
  const std::vector<bool> to_integers = ToIntegers(graph, *order);
  for (const Node& node : graph.nodes()) {
    if (!node.domain.empty() || node.outputs.empty() || !node.outputs[0].valid()) continue;
    const Value& out = graph.value(node.outputs[0]);
    if ((node.op_type == "Div" || node.op_type == "Mod") && node.inputs.size() >= 2 &&
        node.inputs[0].valid() && node.inputs[1].valid() && IsFloating(out.dtype)) {
      const Value& divisor = graph.value(node.inputs[1]);
      const bool in_shape = from_shapes[node.inputs[0].index()] || to_integers[out.id.index()];
      if (in_shape && divisor.float_values && HasZero(*divisor.float_values)) {
        const bool mod = node.op_type == "Mod";
        return MakeError(
            Where(node) + (mod ? "a floating-point modulo" : "a floating-point division") +
            " by zero in a shape computation (input 1 '" + divisor.name +
            "' is 0): the size it computes would be " + (mod ? "NaN" : "infinite or NaN"));
      }
    }
    if (IsCastToInteger(graph, node) && !node.inputs.empty() && node.inputs[0].valid()) {
      const Value& in = graph.value(node.inputs[0]);
      if (IsSmallFloat(in) && in.float_values && HasNonInteger64(*in.float_values))
        return MakeError(Where(node) + "casts '" + in.name +
                         "', which is infinite, NaN or beyond " + "64 bits, to " +
                         std::string(DTypeName(out.dtype)) + " in a shape computation");
    }
  }
  return OkStatus();
}

}  // namespace memplan
