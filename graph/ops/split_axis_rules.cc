#include "graph/ops/split_axis_rules.h"

#include <algorithm>
#include <set>
#include <string>

#include "graph/ops/sdpa_op.h"

namespace memplan {
namespace {

// Ops whose every output element reads only the same element of each (broadcast) input.
const std::set<std::string>& ElementwiseOps() {
  static const std::set<std::string> ops = {"Add",
                                            "Sub",
                                            "Mul",
                                            "Div",
                                            "Pow",
                                            "Where",
                                            "Max",
                                            "Min",
                                            "Sum",
                                            "Mean",
                                            "Equal",
                                            "Less",
                                            "Greater",
                                            "LessOrEqual",
                                            "GreaterOrEqual",
                                            "And",
                                            "Or",
                                            "Xor",
                                            "Not",
                                            "Relu",
                                            "LeakyRelu",
                                            "Elu",
                                            "Selu",
                                            "Celu",
                                            "Gelu",
                                            "Erf",
                                            "Tanh",
                                            "Sigmoid",
                                            "HardSigmoid",
                                            "HardSwish",
                                            "Swish",
                                            "Exp",
                                            "Log",
                                            "Sqrt",
                                            "Reciprocal",
                                            "Neg",
                                            "Abs",
                                            "Cast",
                                            "CastLike",
                                            "Identity",
                                            "Softplus",
                                            "Softsign",
                                            "Clip",
                                            "Sin",
                                            "Cos",
                                            "Mish",
                                            "Sign",
                                            "Floor",
                                            "Ceil",
                                            "Round",
                                            "IsNaN",
                                            "IsInf",
                                            "ThresholdedRelu",
                                            "Dropout",
                                            "FastGelu",
                                            "BiasGelu",
                                            "QuickGelu",
                                            "Trilu"};
  return ops;
}

// Normalisations over the trailing axes from `axis` (default -1).
const std::set<std::string>& TrailingNormOps() {
  static const std::set<std::string> ops = {"LayerNormalization", "RMSNormalization",
                                            "SimplifiedLayerNormalization"};
  return ops;
}

const std::set<std::string>& ReduceOps() {
  static const std::set<std::string> ops = {
      "ReduceMean", "ReduceSum", "ReduceMax",       "ReduceMin",       "ReduceProd",
      "ReduceL1",   "ReduceL2",  "ReduceLogSumExp", "ReduceSumSquare", "ReduceLogSum"};
  return ops;
}

const Shape* ShapeOf(const Graph& graph, ValueId id) {
  if (!id.valid()) return nullptr;
  const Shape& s = graph.value(id).shape;
  return s.known ? &s : nullptr;
}

int64_t Normalized(int64_t axis, size_t rank) {
  return axis < 0 ? axis + static_cast<int64_t>(rank) : axis;
}

std::optional<std::vector<int64_t>> ConstantInts(const Graph& graph, ValueId id) {
  if (!id.valid() || !graph.value(id).contents) return std::nullopt;
  std::vector<int64_t> out;
  for (const Dim& d : *graph.value(id).contents) {
    std::optional<int64_t> c = d.constant_value();
    if (!c) return std::nullopt;
    out.push_back(*c);
  }
  return out;
}

// An attribute list (older opsets) or the constant contents of input `slot` (newer ones).
std::optional<std::vector<int64_t>> IntsFromInputOrAttribute(const Graph& graph, const Node& node,
                                                             size_t slot, const char* attribute) {
  if (node.attributes.Has(attribute)) return node.attributes.GetInts(attribute);
  if (slot < node.inputs.size() && node.inputs[slot].valid())
    return ConstantInts(graph, node.inputs[slot]);
  return std::vector<int64_t>{};
}

TensorSplit MovedTo(TensorSplit split, int axis) {
  split.axis = axis;
  return split;
}

SplitAxes Unchanged(const std::vector<TensorSplit>& inputs, size_t outputs,
                    const TensorSplit& out) {
  return SplitAxes{inputs, std::vector<TensorSplit>(outputs, out)};
}

bool IsWeightLike(const Graph& graph, ValueId id) {
  const ValueKind kind = graph.value(id).kind;
  return kind == ValueKind::kParameter || kind == ValueKind::kConstant;
}

// The first split input, with its axis as the output's axis of rank `rank`.
std::optional<TensorSplit> FirstSplit(const Graph& graph, const Node& node,
                                      const std::vector<TensorSplit>& inputs, int rank) {
  for (size_t i = 0; i < inputs.size(); ++i) {
    if (!inputs[i].split()) continue;
    const Shape* in = ShapeOf(graph, node.inputs[i]);
    if (!in) return std::nullopt;
    return MovedTo(inputs[i], inputs[i].axis + rank - static_cast<int>(in->rank()));
  }
  return std::nullopt;
}

// Broadcasting ops: the split inputs agree on one output axis; a whole input broadcasts along it
// (size 1 or fewer axes) or, being a parameter or constant of the full size, is split with them.
std::optional<SplitAxes> Elementwise(const Graph& graph, const Node& node,
                                     const std::vector<TensorSplit>& inputs) {
  const Shape* out = ShapeOf(graph, node.outputs.at(0));
  if (!out) return std::nullopt;
  const int rank = static_cast<int>(out->rank());
  std::optional<TensorSplit> result_split = FirstSplit(graph, node, inputs, rank);
  if (!result_split) return std::nullopt;
  const int out_axis = result_split->axis;
  SplitAxes result = Unchanged(inputs, node.outputs.size(), *result_split);
  for (size_t i = 0; i < inputs.size(); ++i) {
    if (!node.inputs[i].valid()) continue;
    const Shape* in = ShapeOf(graph, node.inputs[i]);
    if (!in) return std::nullopt;
    const int aligned = out_axis - (rank - static_cast<int>(in->rank()));
    if (inputs[i].split()) {
      if (aligned != inputs[i].axis) return std::nullopt;
      continue;
    }
    if (aligned < 0 || in->dims[aligned] == Dim(1)) continue;  // broadcast along the split
    if (!IsWeightLike(graph, node.inputs[i])) return std::nullopt;
    if (!(in->dims[aligned] == out->dims[out_axis])) return std::nullopt;
    result.inputs[i] = MovedTo(*result_split, aligned);
  }
  return result;
}

// Layout ops: the factor's range of flattened strides [sigma, sigma * factor) lands in the
// output axis j that holds its top (P_j < sigma * factor <= P_j * n_j, P_j the elements after j,
// with exact divisions). The split keeps the factor when it lies within j; when it reaches below
// j, the part of it in j (a multiple of `parts`) becomes the factor, as a merge of heads and head
// size keeps the heads split.
std::optional<TensorSplit> Relocated(const Shape& in, const TensorSplit& split, const Shape& out,
                                     int64_t parts) {
  Dim stride = split.inner;
  for (size_t i = static_cast<size_t>(split.axis) + 1; i < in.rank(); ++i) stride *= in.dims[i];
  const Dim extent = stride * Dim(split.factor);
  Dim after = 1;
  for (int j = static_cast<int>(out.rank()) - 1; j >= 0; --j) {
    const Dim span = after * out.dims[j];
    std::optional<Dim> reach = extent.DivideExactly(after);
    if (reach && !(*reach == Dim(1)) && span.DivideExactly(extent)) {
      TensorSplit moved;
      moved.axis = j;
      if (std::optional<Dim> inner = stride.DivideExactly(after)) {
        moved.inner = *inner;
        moved.factor = split.factor;
      } else if (std::optional<int64_t> top = reach->constant_value();
                 top && after.DivideExactly(stride)) {
        moved.factor = *top;
      } else {
        return std::nullopt;
      }
      if (moved.factor % parts != 0) return std::nullopt;
      return moved;
    }
    after *= out.dims[j];
  }
  return std::nullopt;
}

std::optional<SplitAxes> Layout(const Graph& graph, const Node& node,
                                const std::vector<TensorSplit>& inputs, int64_t parts) {
  for (size_t i = 1; i < inputs.size(); ++i)
    if (inputs[i].split()) return std::nullopt;  // a split shape tensor
  const Shape* in = ShapeOf(graph, node.inputs.at(0));
  const Shape* out = ShapeOf(graph, node.outputs.at(0));
  if (!in || !out) return std::nullopt;
  std::optional<TensorSplit> moved = Relocated(*in, inputs[0], *out, parts);
  if (!moved) return std::nullopt;
  return Unchanged(inputs, node.outputs.size(), *moved);
}

std::optional<SplitAxes> Transpose(const Graph& graph, const Node& node,
                                   const std::vector<TensorSplit>& inputs) {
  const Shape* in = ShapeOf(graph, node.inputs.at(0));
  if (!in) return std::nullopt;
  std::vector<int64_t> perm = node.attributes.GetInts("perm");
  if (perm.empty())
    for (int64_t i = static_cast<int64_t>(in->rank()) - 1; i >= 0; --i) perm.push_back(i);
  for (size_t j = 0; j < perm.size(); ++j)
    if (perm[j] == inputs[0].axis)
      return Unchanged(inputs, 1, MovedTo(inputs[0], static_cast<int>(j)));
  return std::nullopt;
}

std::optional<SplitAxes> Softmax(const Graph& graph, const Node& node,
                                 const std::vector<TensorSplit>& inputs) {
  const Shape* in = ShapeOf(graph, node.inputs.at(0));
  if (!in) return std::nullopt;
  auto opset = graph.opset_imports.find("");
  const bool flattens = opset != graph.opset_imports.end() && opset->second < 13;
  const int64_t axis = Normalized(node.attributes.GetInt("axis", flattens ? 1 : -1), in->rank());
  // Below opset 13 the op normalises over every axis from `axis` on.
  if (flattens ? inputs[0].axis >= axis : inputs[0].axis == axis) return std::nullopt;
  return Unchanged(inputs, node.outputs.size(), inputs[0]);
}

std::optional<SplitAxes> TrailingNorm(const Graph& graph, const Node& node,
                                      const std::vector<TensorSplit>& inputs) {
  for (size_t i = 1; i < inputs.size(); ++i)
    if (inputs[i].split()) return std::nullopt;
  const Shape* in = ShapeOf(graph, node.inputs.at(0));
  if (!in) return std::nullopt;
  if (inputs[0].axis >= Normalized(node.attributes.GetInt("axis", -1), in->rank()))
    return std::nullopt;
  return Unchanged(inputs, node.outputs.size(), inputs[0]);
}

std::optional<SplitAxes> Reduce(const Graph& graph, const Node& node,
                                const std::vector<TensorSplit>& inputs) {
  const Shape* in = ShapeOf(graph, node.inputs.at(0));
  if (!in) return std::nullopt;
  std::optional<std::vector<int64_t>> reduced = IntsFromInputOrAttribute(graph, node, 1, "axes");
  if (!reduced || reduced->empty()) return std::nullopt;  // all axes, or unknown
  int below = 0;
  for (int64_t a : *reduced) {
    const int64_t n = Normalized(a, in->rank());
    if (n == inputs[0].axis) return std::nullopt;
    if (n < inputs[0].axis) ++below;
  }
  const bool keep = node.attributes.GetInt("keepdims", 1) != 0;
  return Unchanged(inputs, node.outputs.size(),
                   MovedTo(inputs[0], keep ? inputs[0].axis : inputs[0].axis - below));
}

// Split and Slice along the split axis of a whole-axis split (a fused QKV projection's output):
// every rank keeps its part of each piece, as Megatron lays out a fused QKV weight, so each piece
// is a whole-axis split again.
std::optional<SplitAxes> PiecesOfSplitAxis(const Graph& graph, const Node& node,
                                           const std::vector<TensorSplit>& inputs, int64_t parts) {
  const Shape* in = ShapeOf(graph, node.inputs.at(0));
  if (!in || !(inputs[0].inner == Dim(1)) || !(Dim(inputs[0].factor) == in->dims[inputs[0].axis]))
    return std::nullopt;
  SplitAxes result{inputs, {}};
  for (ValueId out : node.outputs) {
    const Shape* s = ShapeOf(graph, out);
    if (!s || !DividesInto(s->dims[inputs[0].axis], parts)) return std::nullopt;
    result.outputs.push_back(WholeAxisSplit(inputs[0].axis, s->dims[inputs[0].axis]));
  }
  return result;
}

std::optional<SplitAxes> SplitOp(const Graph& graph, const Node& node,
                                 const std::vector<TensorSplit>& inputs, int64_t parts) {
  const Shape* in = ShapeOf(graph, node.inputs.at(0));
  if (!in) return std::nullopt;
  const int64_t axis = Normalized(node.attributes.GetInt("axis", 0), in->rank());
  if (axis == inputs[0].axis) return PiecesOfSplitAxis(graph, node, inputs, parts);
  return Unchanged(inputs, node.outputs.size(), inputs[0]);
}

std::optional<SplitAxes> Slice(const Graph& graph, const Node& node,
                               const std::vector<TensorSplit>& inputs, int64_t parts) {
  for (size_t i = 1; i < inputs.size(); ++i)
    if (inputs[i].split()) return std::nullopt;
  const Shape* in = ShapeOf(graph, node.inputs.at(0));
  if (!in) return std::nullopt;
  std::optional<std::vector<int64_t>> sliced = IntsFromInputOrAttribute(graph, node, 3, "axes");
  if (!sliced) return std::nullopt;
  if (sliced->empty()) {  // every axis from 0, one per start
    std::optional<std::vector<int64_t>> starts = IntsFromInputOrAttribute(graph, node, 1, "starts");
    if (!starts) return std::nullopt;
    for (size_t i = 0; i < starts->size(); ++i) sliced->push_back(static_cast<int64_t>(i));
  }
  for (int64_t a : *sliced)
    if (Normalized(a, in->rank()) == inputs[0].axis)
      return PiecesOfSplitAxis(graph, node, inputs, parts);
  return Unchanged(inputs, node.outputs.size(), inputs[0]);
}

std::optional<SplitAxes> Concat(const Graph& graph, const Node& node,
                                const std::vector<TensorSplit>& inputs) {
  const Shape* out = ShapeOf(graph, node.outputs.at(0));
  if (!out) return std::nullopt;
  const int64_t axis = Normalized(node.attributes.GetInt("axis", 0), out->rank());
  for (const TensorSplit& s : inputs)
    if (!(s == inputs[0]) || s.axis == axis) return std::nullopt;
  return Unchanged(inputs, 1, inputs[0]);
}

std::optional<SplitAxes> Gather(const Graph& graph, const Node& node,
                                const std::vector<TensorSplit>& inputs) {
  if (!inputs[0].split() || inputs.at(1).split()) return std::nullopt;
  const Shape* data = ShapeOf(graph, node.inputs[0]);
  const Shape* indices = ShapeOf(graph, node.inputs[1]);
  if (!data || !indices) return std::nullopt;
  const int64_t axis = Normalized(node.attributes.GetInt("axis", 0), data->rank());
  if (axis == inputs[0].axis) return std::nullopt;
  const int shift = inputs[0].axis < axis ? 0 : static_cast<int>(indices->rank()) - 1;
  return Unchanged(inputs, 1, MovedTo(inputs[0], inputs[0].axis + shift));
}

// x @ y with neither operand contracted over its split axis.
std::optional<SplitAxes> MatMul(const Graph& graph, const Node& node,
                                const std::vector<TensorSplit>& inputs) {
  const Shape* a = ShapeOf(graph, node.inputs.at(0));
  const Shape* b = ShapeOf(graph, node.inputs.at(1));
  const Shape* out = ShapeOf(graph, node.outputs.at(0));
  if (!a || !b || !out || a->rank() < 2 || b->rank() < 2) return std::nullopt;
  const int ra = static_cast<int>(a->rank()), rb = static_cast<int>(b->rank());
  const int r = static_cast<int>(out->rank());
  auto out_axis_of = [&](int slot) -> std::optional<int> {
    const int s = inputs[slot].axis;
    const int rank = slot == 0 ? ra : rb;
    if (slot == 0 && s == ra - 1) return std::nullopt;  // contraction (K of x)
    if (slot == 1 && s == rb - 2) return std::nullopt;  // contraction (K of y)
    if (s >= rank - 2) return slot == 0 ? r - 2 : r - 1;
    return s + r - rank;  // a batch axis
  };
  std::optional<TensorSplit> result_split;
  for (int slot = 0; slot < 2; ++slot) {
    if (!inputs[slot].split()) continue;
    std::optional<int> o = out_axis_of(slot);
    if (!o || (result_split && result_split->axis != *o)) return std::nullopt;
    result_split = MovedTo(inputs[slot], *o);
  }
  if (!result_split) return std::nullopt;
  SplitAxes result = Unchanged(inputs, 1, *result_split);
  if (result_split->axis < r - 2) {
    // A split batch axis: the other operand must broadcast along it or be split with it.
    for (int slot = 0; slot < 2; ++slot) {
      if (inputs[slot].split()) continue;
      const Shape* s = slot == 0 ? a : b;
      const int aligned = result_split->axis - (r - static_cast<int>(s->rank()));
      if (aligned < 0 || s->dims[aligned] == Dim(1)) continue;
      if (!IsWeightLike(graph, node.inputs[slot])) return std::nullopt;
      result.inputs[slot] = MovedTo(*result_split, aligned);
    }
  } else if (inputs[0].split() && inputs[1].split()) {
    return std::nullopt;  // rows of x and columns of y split: each rank has a corner only
  }
  return result;
}

// Whether each rank's part of a packed [B, S, heads * head] tensor split on its last axis is whole
// heads: one contiguous block per rank (nothing repeats outside the factor) a multiple of `head`.
bool WholeHeadsPerRank(const Shape& shape, const TensorSplit& split, int64_t head, int64_t parts) {
  auto n = shape.dims[2].constant_value();
  auto inner = split.inner.constant_value();
  if (split.axis != 2 || !n || !inner || split.factor * *inner != *n || *n % parts != 0)
    return false;
  return (*n / parts) % head == 0;
}

// The packed 3D form ([B, S, heads * head], head_size set): q, k and v split on the hidden axis
// into whole heads; the output likewise.
std::optional<SplitAxes> PackedAttention(const Graph& graph, const Node& node,
                                         const std::vector<TensorSplit>& inputs, int64_t head,
                                         int64_t parts) {
  for (int slot = 0; slot < 3; ++slot) {
    const Shape* s = ShapeOf(graph, node.inputs.at(slot));
    if (!s || s->rank() != 3 || !WholeHeadsPerRank(*s, inputs[slot], head, parts))
      return std::nullopt;
  }
  // A mask broadcasts over the heads axis of [B, H, Sq, Sk]; one with its own heads stays whole
  // only where it has none.
  if (node.inputs.size() > 3 && node.inputs[3].valid()) {
    const Shape* mask = ShapeOf(graph, node.inputs[3]);
    if (!mask || inputs[3].split()) return std::nullopt;
    const int heads_axis = static_cast<int>(mask->rank()) - 3;  // right-aligned against 4D
    if (heads_axis >= 0 && !(mask->dims[heads_axis] == Dim(1))) return std::nullopt;
  }
  for (size_t slot = 4; slot < inputs.size(); ++slot)
    if (inputs[slot].split()) return std::nullopt;
  const Shape* out = ShapeOf(graph, node.outputs.at(0));
  if (!out || out->rank() != 3) return std::nullopt;
  SplitAxes result{inputs, {}};
  result.outputs.push_back(WholeAxisSplit(2, out->dims[2]));
  return result;
}

// memplan:ScaledDotProductAttention on [B, H, S, D] split by heads (axis 1), on the 3-D
// [B*H, S, D] of bmm-style exports split along the folded heads (axis 0), or packed (above).
std::optional<SplitAxes> Attention(const Graph& graph, const Node& node,
                                   const std::vector<TensorSplit>& inputs, int64_t parts) {
  const Shape* query = ShapeOf(graph, node.inputs.at(0));
  if (!query || (query->rank() != 3 && query->rank() != 4)) return std::nullopt;
  const int64_t head_size = node.attributes.GetInt(sdpa::kHeadSize, 0);
  if (head_size > 0) return PackedAttention(graph, node, inputs, head_size, parts);
  const int rank = static_cast<int>(query->rank());
  const int heads_axis = rank == 4 ? 1 : 0;
  for (int slot = 0; slot < 3; ++slot) {
    const Shape* s = ShapeOf(graph, node.inputs.at(slot));
    if (!s || static_cast<int>(s->rank()) != rank || inputs[slot].axis != heads_axis)
      return std::nullopt;
  }
  SplitAxes result = Unchanged(inputs, node.outputs.size(), inputs[0]);
  if (node.inputs.size() > 3 && node.inputs[3].valid()) {
    const Shape* mask = ShapeOf(graph, node.inputs[3]);
    if (!mask) return std::nullopt;
    const int aligned = heads_axis - (rank - static_cast<int>(mask->rank()));
    if (inputs[3].split()) {
      if (inputs[3].axis != aligned) return std::nullopt;
    } else if (aligned >= 0 && !(mask->dims[aligned] == Dim(1))) {
      if (!IsWeightLike(graph, node.inputs[3])) return std::nullopt;
      result.inputs[3] = MovedTo(inputs[0], aligned);
    }
  }
  for (size_t slot = 4; slot < inputs.size(); ++slot)
    if (inputs[slot].split()) return std::nullopt;
  return result;
}

std::optional<SplitAxes> Propagate(const Graph& graph, const Node& node,
                                   const std::vector<TensorSplit>& inputs, int64_t parts) {
  const std::string& op = node.op_type;
  if (node.domain == sdpa::kDomain && op == sdpa::kOpType)
    return Attention(graph, node, inputs, parts);
  if (op == "Shape" || op == "Size")  // reads no element
    return SplitAxes{inputs, std::vector<TensorSplit>(node.outputs.size())};
  if (op == "Expand") {
    const Shape* in = ShapeOf(graph, node.inputs.at(0));
    const Shape* out = ShapeOf(graph, node.outputs.at(0));
    if (!in || !out || !inputs[0].split()) return std::nullopt;
    const int axis = inputs[0].axis + static_cast<int>(out->rank() - in->rank());
    if (!(in->dims[inputs[0].axis] == out->dims[axis])) return std::nullopt;
    return Unchanged(inputs, 1, MovedTo(inputs[0], axis));
  }
  if (op == "RotaryEmbedding") {  // 4-D [B, H, S, D] only: the 3-D form counts heads itself
    const Shape* in = ShapeOf(graph, node.inputs.at(0));
    if (!in || in->rank() != 4 || inputs[0].axis != 1) return std::nullopt;
    for (size_t i = 1; i < inputs.size(); ++i)
      if (inputs[i].split()) return std::nullopt;
    return Unchanged(inputs, 1, inputs[0]);
  }
  // Dropout's ratio and training_mode, Clip's bounds: scalars, which broadcast.
  if (ElementwiseOps().count(op)) return Elementwise(graph, node, inputs);
  if (op == "Softmax" || op == "LogSoftmax") return Softmax(graph, node, inputs);
  if (TrailingNormOps().count(op)) return TrailingNorm(graph, node, inputs);
  if (ReduceOps().count(op)) return Reduce(graph, node, inputs);
  if (op == "Reshape" || op == "Flatten" || op == "Squeeze" || op == "Unsqueeze")
    return Layout(graph, node, inputs, parts);
  if (op == "Transpose") return Transpose(graph, node, inputs);
  if (op == "Split") return SplitOp(graph, node, inputs, parts);
  if (op == "Slice") return Slice(graph, node, inputs, parts);
  if (op == "Concat") return Concat(graph, node, inputs);
  if (op == "Gather") return Gather(graph, node, inputs);
  if (op == "MatMul") return MatMul(graph, node, inputs);
  return std::nullopt;
}

}  // namespace

bool DividesInto(const Dim& dim, int64_t parts) {
  if (parts <= 0 || dim.terms().empty()) return false;
  return dim.DivideExactly(Dim(parts)).has_value();
}

TensorSplit WholeAxisSplit(int axis, const Dim& size) {
  TensorSplit split;
  split.axis = axis;
  split.factor = size.constant_value().value_or(0);
  return split;
}

std::optional<SplitAxes> PropagateSplit(const Graph& graph, const Node& node,
                                        const std::vector<TensorSplit>& inputs, int64_t parts) {
  std::optional<SplitAxes> result = Propagate(graph, node, inputs, parts);
  if (!result) return std::nullopt;
  // Every split tensor, new ones included, must divide into equal parts.
  auto divides = [&](ValueId id, const TensorSplit& split) {
    if (!split.split() || !id.valid()) return true;
    const Shape* s = ShapeOf(graph, id);
    return s && split.axis < static_cast<int>(s->rank()) && split.factor > 0 &&
           split.factor % parts == 0 && DividesInto(s->dims[split.axis], parts);
  };
  for (size_t i = 0; i < node.outputs.size(); ++i)
    if (!divides(node.outputs[i], result->outputs[i])) return std::nullopt;
  for (size_t i = 0; i < node.inputs.size(); ++i)
    if (!divides(node.inputs[i], result->inputs[i])) return std::nullopt;
  return result;
}

}  // namespace memplan
