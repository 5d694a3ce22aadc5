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
//
// torch.onnx's dynamo exporter writes native_group_norm the same way (onnxscript torch_lib
// aten_native_group_norm: InstanceNormalization on [0, G, -1], Reshape to Shape(x), Mul and Add
// of the unsqueezed weight and bias), and its optimizer folds what is constant: with x's shape
// static, Shape(x) becomes a constant target (x's dims, as its value_info records them), and
// Unsqueeze(w) an initializer [C, 1, ..., 1] of rank(x) - 1 (metadata "folded_from" w, so it
// trains as w; graph/exported_buffers.h). Both forms are taken; the fused node reads the folded
// [C, 1, ..., 1] weight as it is (C values, as w).

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

// The static dims of `value` as the graph's value_info or inputs record them (all known).
std::optional<std::vector<int64_t>> StaticDims(const ProtoIndex& index, const std::string& value) {
  const onnx::GraphProto& g = index.graph();
  for (const auto* list : {&g.value_info(), &g.input()}) {
    for (const auto& vi : *list) {
      if (vi.name() != value || !vi.type().has_tensor_type() ||
          !vi.type().tensor_type().has_shape())
        continue;
      std::vector<int64_t> dims;
      for (const auto& d : vi.type().tensor_type().shape().dim()) {
        if (!d.has_dim_value() || d.dim_value() <= 0) return std::nullopt;
        dims.push_back(d.dim_value());
      }
      return dims;
    }
  }
  return std::nullopt;
}

// The dynamo exporter's folded Unsqueeze(w): an initializer [C, 1, ..., 1] of rank(x) - 1, C
// being x's channels, read only by this node.
std::optional<std::string> FoldedChannelWeight(const ProtoIndex& index, const std::string& value,
                                               const std::vector<int64_t>& x_dims) {
  const onnx::TensorProto* t = index.Initializer(value);
  if (t == nullptr || !index.SoleConsumer(value) || x_dims.size() < 3 ||
      t->dims_size() != static_cast<int>(x_dims.size()) - 1 || t->dims(0) != x_dims[1])
    return std::nullopt;
  for (int i = 1; i < t->dims_size(); ++i)
    if (t->dims(i) != 1) return std::nullopt;
  return value;
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
  const auto x_dims = StaticDims(index, x);
  // The whole shape: Shape-15's start/end attributes would take a slice of it. Or, folded, x's
  // static dims.
  const bool by_shape = shape_node && IsOp(index.node(*shape_node), "Shape", 1) &&
                        index.node(*shape_node).input(0) == x &&
                        index.node(*shape_node).attribute_size() == 0;
  const bool by_dims = !shape_node && x_dims && index.Integers(reshape_out.input(1)) == *x_dims;
  if (!by_shape && !by_dims) return std::nullopt;
  // Times the unsqueezed weight, plus the unsqueezed bias.
  auto scale = SoleConsumerOp(index, reshape_out.output(0), "Mul", 2);
  if (!scale) return std::nullopt;
  // The weight and bias: unsqueezed (node index and initializer), or folded (no node).
  auto affine = [&](const std::optional<std::string>& value)
      -> std::optional<std::pair<std::optional<int>, std::string>> {
    if (!value) return std::nullopt;
    if (auto u = UnsqueezedWeight(index, *value)) return std::make_pair(u->first, u->second);
    if (!x_dims) return std::nullopt;
    if (auto f = FoldedChannelWeight(index, *value, *x_dims))
      return std::make_pair(std::nullopt, *f);
    return std::nullopt;
  };
  auto w = affine(OtherOperand(index.node(*scale), reshape_out.output(0)));
  if (!w) return std::nullopt;
  auto shift = SoleConsumerOp(index, index.node(*scale).output(0), "Add", 2);
  if (!shift) return std::nullopt;
  auto b = affine(OtherOperand(index.node(*shift), index.node(*scale).output(0)));
  if (!b) return std::nullopt;

  FusionMatch m;
  m.nodes = {*split, norm_node, *unsplit, *scale, *shift};
  if (w->first) m.nodes.push_back(*w->first);
  if (b->first) m.nodes.push_back(*b->first);
  // Shape(x) goes with the pattern when nothing else reads it.
  if (by_shape && index.SoleConsumer(reshape_out.input(1))) m.nodes.push_back(*shape_node);
  m.last = *shift;
  m.fused =
      FusedNode("GroupNormalization", "", {x, w->second, b->second}, index.node(*shift).output(0));
  SetIntAttribute(m.fused, "num_groups", groups);
  SetFloatAttribute(m.fused, "epsilon", static_cast<float>(epsilon));
  return m;
}

}  // namespace memplan
