#include "graph/ops/geometry/reshape.h"

#include <string>

#include "graph/checked_math.h"

namespace memplan {
namespace {

// The few operations the rules need, for concrete and symbolic sizes alike.
std::optional<int64_t> ConstantOf(int64_t d) { return d; }
std::optional<int64_t> ConstantOf(const Dim& d) { return d.constant_value(); }

// a * b; nullopt when a concrete product overflows (a Dim records its own overflow).
std::optional<int64_t> Times(int64_t a, int64_t b) { return CheckedMul(a, b); }
std::optional<Dim> Times(const Dim& a, const Dim& b) { return a * b; }

// a / b when exact.
std::optional<int64_t> DivideExactly(int64_t a, int64_t b) { return CheckedDivideExactly(a, b); }
std::optional<Dim> DivideExactly(const Dim& a, const Dim& b) { return a.DivideExactly(b); }

std::string DimText(const std::optional<int64_t>& c) { return c ? std::to_string(*c) : "?"; }

template <class D>
std::string ShapeText(const std::vector<D>& dims) {
  std::string out = "[";
  for (size_t i = 0; i < dims.size(); ++i) out += (i ? ", " : "") + DimText(ConstantOf(dims[i]));
  return out + "]";
}

Error Overflow() { return Error{"the element count overflows int64"}; }

template <class D>
Expected<D> Product(const std::vector<D>& dims, size_t begin, size_t end) {
  D product(1);
  for (size_t i = begin; i < end; ++i) {
    std::optional<D> next = Times(product, dims[i]);
    if (!next) return Overflow();
    product = *next;
  }
  return product;
}

Expected<size_t> NormalizedAxis(int64_t axis, size_t rank) {
  const auto r = static_cast<int64_t>(rank);
  if (axis < -r || axis >= r) {
    return MakeError("axis " + std::to_string(axis) + " is out of range for rank " +
                     std::to_string(rank));
  }
  return static_cast<size_t>(axis < 0 ? axis + r : axis);
}

// One flag per axis of a tensor of `rank` dims: true at each of `axes`.
Expected<std::vector<bool>> AxisMask(const std::vector<int64_t>& axes, size_t rank) {
  std::vector<bool> mask(rank, false);
  for (int64_t a : axes) {
    MEMPLAN_TRY(size_t axis, NormalizedAxis(a, rank));
    if (mask[axis]) return MakeError("axis " + std::to_string(a) + " is repeated");
    mask[axis] = true;
  }
  return mask;
}

}  // namespace

template <class D>
Expected<ReshapeOutput<D>> ReshapeShape(const std::vector<D>* input, const std::vector<D>& target,
                                        bool allow_zero) {
  ReshapeOutput<D> out;
  out.dims.resize(target.size());
  D known_product(1);
  for (size_t i = 0; i < target.size(); ++i) {
    const std::optional<int64_t> c = ConstantOf(target[i]);
    if (c && *c == -1) {
      if (out.unresolved) return MakeError("more than one -1 in the target shape");
      out.unresolved = i;
      continue;
    }
    if (c && *c < -1) return MakeError("invalid dim " + std::to_string(*c) + " in target");
    if (c && *c == 0 && !allow_zero) {
      // 0 copies the input's dim at the same index.
      if (input == nullptr) {
        out.needs_input = true;
        return out;
      }
      if (i >= input->size()) {
        return MakeError("target dim " + std::to_string(i) + " is 0 but the input has rank " +
                         std::to_string(input->size()));
      }
      out.dims[i] = (*input)[i];
    } else {
      out.dims[i] = target[i];
    }
    std::optional<D> next = Times(known_product, out.dims[i]);
    if (!next) return Overflow();
    known_product = *next;
  }
  if (input == nullptr) return out;
  MEMPLAN_TRY(D count, Product(*input, 0, input->size()));
  if (out.unresolved) {
    if (std::optional<D> rest = DivideExactly(count, known_product)) {
      out.dims[*out.unresolved] = *rest;
      out.unresolved.reset();
    } else if (ConstantOf(count) && ConstantOf(known_product)) {
      return MakeError("cannot infer the -1 reshaping " + ShapeText(*input) + " (" +
                       DimText(ConstantOf(count)) + " elements) to " + ShapeText(target));
    }
    return out;
  }
  const std::optional<int64_t> in_count = ConstantOf(count);
  const std::optional<int64_t> out_count = ConstantOf(known_product);
  if (in_count && out_count && *in_count != *out_count) {
    return MakeError("cannot reshape " + ShapeText(*input) + " (" + std::to_string(*in_count) +
                     " elements) to " + ShapeText(out.dims));
  }
  return out;
}

template <class D>
Expected<std::vector<D>> FlattenShape(const std::vector<D>& input, int64_t axis) {
  const auto rank = static_cast<int64_t>(input.size());
  const int64_t split = axis < 0 ? axis + rank : axis;
  if (split < 0 || split > rank) {
    return MakeError("axis " + std::to_string(axis) + " is out of range for rank " +
                     std::to_string(rank));
  }
  const auto at = static_cast<size_t>(split);
  MEMPLAN_TRY(D outer, Product(input, 0, at));
  MEMPLAN_TRY(D inner, Product(input, at, input.size()));
  return std::vector<D>{outer, inner};
}

template <class D>
Expected<std::vector<D>> SqueezeShape(const std::vector<D>& input,
                                      const std::vector<int64_t>& axes) {
  std::vector<bool> drop(input.size(), false);
  if (axes.empty()) {
    // No axes: every dim known to be 1 goes (a symbol is assumed not to be 1).
    for (size_t i = 0; i < input.size(); ++i) drop[i] = ConstantOf(input[i]) == 1;
  } else {
    MEMPLAN_TRY(drop, AxisMask(axes, input.size()));
  }
  std::vector<D> out;
  for (size_t i = 0; i < input.size(); ++i) {
    if (!drop[i]) {
      out.push_back(input[i]);
    } else if (std::optional<int64_t> c = ConstantOf(input[i]); c && *c != 1) {
      return MakeError("cannot squeeze axis " + std::to_string(i) + " of size " +
                       std::to_string(*c));
    }
  }
  return out;
}

template <class D>
Expected<std::vector<D>> UnsqueezeShape(const std::vector<D>& input,
                                        const std::vector<int64_t>& axes) {
  const size_t out_rank = input.size() + axes.size();
  MEMPLAN_TRY(std::vector<bool> inserted, AxisMask(axes, out_rank));
  std::vector<D> out;
  size_t next = 0;
  for (size_t i = 0; i < out_rank; ++i) out.push_back(inserted[i] ? D(1) : input[next++]);
  return out;
}

// The two kinds of size the rules serve.
template Expected<ReshapeOutput<int64_t>> ReshapeShape(const std::vector<int64_t>*,
                                                       const std::vector<int64_t>&, bool);
template Expected<ReshapeOutput<Dim>> ReshapeShape(const std::vector<Dim>*, const std::vector<Dim>&,
                                                   bool);
template Expected<std::vector<int64_t>> FlattenShape(const std::vector<int64_t>&, int64_t);
template Expected<std::vector<Dim>> FlattenShape(const std::vector<Dim>&, int64_t);
template Expected<std::vector<int64_t>> SqueezeShape(const std::vector<int64_t>&,
                                                     const std::vector<int64_t>&);
template Expected<std::vector<Dim>> SqueezeShape(const std::vector<Dim>&,
                                                 const std::vector<int64_t>&);
template Expected<std::vector<int64_t>> UnsqueezeShape(const std::vector<int64_t>&,
                                                       const std::vector<int64_t>&);
template Expected<std::vector<Dim>> UnsqueezeShape(const std::vector<Dim>&,
                                                   const std::vector<int64_t>&);

}  // namespace memplan
