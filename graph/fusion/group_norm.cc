// group_norm: nn.GroupNorm as torch.onnx writes it below opset 18 (symbolic_opset9.group_norm):
//   r = Reshape(x, [0, G, -1]);  n = InstanceNormalization(r, ones[G], zeros[G], epsilon)
//   y = Add(Mul(Reshape(n, Shape(x)), Unsqueeze(w, 1..k)), Unsqueeze(b, 1..k))
// Fused into GroupNormalization(x, w, b) with num_groups = G and per-channel w and b (opset 21's
// form), which the registry plans as native_group_norm: input, weight and [N, G] statistics
// kept. Node by node the chain keeps the normalised tensor for the Mul's weight gradient as well:
// one activation more per GroupNorm than autograd keeps (a small UNet: +22% of its saved bytes,
// docs/measurements.md).
//
// Exact only when the Reshape targets are [0, G, -1] and Shape(x) of the same x, the instance
// norm's scale and bias are all ones and all zeros of one length G, every intermediate feeds only
// the next node, and w and b are rank-1 initializers unsqueezed on axes 1, 2, ... (torch writes
// rank(x) - 2 of them).

#include "graph/fusion/patterns.h"

namespace memplan {
namespace {

bool AllEqual(const std::optional<std::vector<double>>& values, double expected, size_t count) {
  if (!values || values->size() != count) return false;
  for (double v : *values)
    if (!Near(v, expected) && !(expected == 0.0 && v == 0.0)) return false;
  return true;
}

// The rank-1 initializer `value` is an Unsqueeze of, on axes 1, 2, ..., k (k >= 1): its node
// index and the initializer's name.
std::optional<std::pair<int, std::string>> UnsqueezedWeight(const ProtoIndex& index,
                                                            const std::string& value) {
  auto producer = index.Producer(value);
  if (!producer || !index.SoleConsumer(value)) return std::nullopt;
  const auto& n = index.node(*producer);
  if (n.op_type() != "Unsqueeze" || !n.domain().empty() || n.output_size() != 1)
    return std::nullopt;
  std::optional<std::vector<int64_t>> axes;
  if (n.input_size() == 2) axes = index.Integers(n.input(1));
  for (const auto& a : n.attribute())
    if (a.name() == "axes") axes = std::vector<int64_t>(a.ints().begin(), a.ints().end());
  if (!axes || axes->empty()) return std::nullopt;
  for (size_t i = 0; i < axes->size(); ++i)
    if ((*axes)[i] != static_cast<int64_t>(i + 1)) return std::nullopt;
  if (!IsSmallRankWeight(index, n.input(0), 1)) return std::nullopt;
  const onnx::TensorProto* t = index.Initializer(n.input(0));
  if (t == nullptr || t->dims_size() != 1) return std::nullopt;
  return std::make_pair(*producer, n.input(0));
}

}  // namespace

std::optional<FusionMatch> MatchGroupNorm(const ProtoIndex& index, int norm_node) {
  const auto& norm = index.node(norm_node);
  if (!IsOp(norm, "InstanceNormalization", 3)) return std::nullopt;
  // x reshaped to [0, G, -1], feeding only the norm.
  const std::string& grouped = norm.input(0);
  auto split = index.Producer(grouped);
  if (!split || !index.SoleConsumer(grouped)) return std::nullopt;
  const auto& reshape_in = index.node(*split);
  if (!IsOp(reshape_in, "Reshape", 2)) return std::nullopt;
  auto target = index.Integers(reshape_in.input(1));
  if (!target || target->size() != 3 || (*target)[0] != 0 || (*target)[1] <= 0 ||
      (*target)[2] != -1)
    return std::nullopt;
  const int64_t groups = (*target)[1];
  const std::string& x = reshape_in.input(0);
  if (!AllEqual(index.Reals(norm.input(1)), 1.0, static_cast<size_t>(groups)) ||
      !AllEqual(index.Reals(norm.input(2)), 0.0, static_cast<size_t>(groups)))
    return std::nullopt;
  double epsilon = 1e-5;
  for (const auto& a : norm.attribute())
    if (a.name() == "epsilon") epsilon = a.f();
  // Back to x's shape by Shape(x).
  auto unsplit = SoleConsumerOp(index, norm.output(0), "Reshape", 2);
  if (!unsplit) return std::nullopt;
  const auto& reshape_out = index.node(*unsplit);
  if (reshape_out.input(0) != norm.output(0)) return std::nullopt;
  auto shape_node = index.Producer(reshape_out.input(1));
  // The whole shape: Shape-15's start/end attributes would take a slice of it.
  if (!shape_node || !IsOp(index.node(*shape_node), "Shape", 1) ||
      index.node(*shape_node).input(0) != x || index.node(*shape_node).attribute_size() != 0)
    return std::nullopt;
  // Times the unsqueezed weight, plus the unsqueezed bias.
  auto scale = SoleConsumerOp(index, reshape_out.output(0), "Mul", 2);
  if (!scale) return std::nullopt;
  auto w_value = OtherOperand(index.node(*scale), reshape_out.output(0));
  auto w = w_value ? UnsqueezedWeight(index, *w_value) : std::nullopt;
  if (!w) return std::nullopt;
  auto shift = SoleConsumerOp(index, index.node(*scale).output(0), "Add", 2);
  if (!shift) return std::nullopt;
  auto b_value = OtherOperand(index.node(*shift), index.node(*scale).output(0));
  auto b = b_value ? UnsqueezedWeight(index, *b_value) : std::nullopt;
  if (!b) return std::nullopt;

  FusionMatch m;
  m.nodes = {*split, norm_node, *unsplit, *scale, w->first, *shift, b->first};
  // Shape(x) goes with the pattern when nothing else reads it.
  if (index.SoleConsumer(reshape_out.input(1))) m.nodes.push_back(*shape_node);
  m.last = *shift;
  m.fused =
      FusedNode("GroupNormalization", "", {x, w->second, b->second}, index.node(*shift).output(0));
  SetIntAttribute(m.fused, "num_groups", groups);
  SetFloatAttribute(m.fused, "epsilon", static_cast<float>(epsilon));
  return m;
}

}  // namespace memplan
