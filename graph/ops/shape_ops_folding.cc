#include "graph/ops/shape_ops_folding.h"

#include <algorithm>

#include "graph/checked_math.h"

namespace memplan {
namespace {

// True when every term has a positive coefficient: with positive symbols the value is >= 1
// for a non-constant polynomial, and >= its constant term otherwise.
bool AllCoefficientsPositive(const Dim& d) {
  if (d.overflowed()) return false;
  for (const auto& t : d.terms())
    if (t.coefficient <= 0) return false;
  return true;
}

}  // namespace

std::optional<std::vector<int64_t>> ConstantDims(const Shape& shape) {
  if (!shape.known) return std::nullopt;
  std::vector<int64_t> dims;
  dims.reserve(shape.rank());
  for (const Dim& d : shape.dims) {
    auto c = d.constant_value();
    if (!c) return std::nullopt;
    dims.push_back(*c);
  }
  return dims;
}

std::optional<int64_t> FoldableElementCount(const Shape& shape) {
  auto dims = ConstantDims(shape);
  if (!dims) return std::nullopt;
  int64_t count = 1;
  for (int64_t d : *dims) {
    if (d < 0) return std::nullopt;
    auto product = CheckedMul(count, d);
    if (!product || *product > kMaxFoldedElements) return std::nullopt;
    count = *product;
  }
  return count;
}

std::vector<Dim> DimsOf(const std::vector<int64_t>& values) {
  return std::vector<Dim>(values.begin(), values.end());
}

bool IsFoldableDType(DType dtype) { return IsInteger(dtype) || dtype == DType::kBool; }

std::optional<std::vector<Dim>> StridedContents(const TensorInfo& info,
                                                const std::vector<int64_t>& out_dims,
                                                const std::vector<int64_t>& axis_of,
                                                const std::vector<int64_t>& first,
                                                const std::vector<int64_t>& step) {
  if (!info.present || !info.contents) return std::nullopt;
  auto in_dims = ConstantDims(info.shape);
  auto in_count = FoldableElementCount(info.shape);
  const size_t rank = out_dims.size();
  if (!in_dims || !in_count || static_cast<int64_t>(info.contents->size()) != *in_count ||
      in_dims->size() != rank || axis_of.size() != rank || first.size() != rank ||
      step.size() != rank)
    return std::nullopt;
  int64_t out_count = 1;
  for (int64_t d : out_dims) {
    auto product = CheckedMul(out_count, d);
    if (d < 0 || !product || *product > kMaxFoldedElements) return std::nullopt;
    out_count = *product;
  }
  // Row-major strides of the input.
  std::vector<int64_t> in_stride(rank, 1);
  for (size_t i = rank; i-- > 1;) in_stride[i - 1] = in_stride[i] * (*in_dims)[i];
  std::vector<Dim> out;
  out.reserve(static_cast<size_t>(out_count));
  std::vector<int64_t> index(rank, 0);
  for (int64_t flat = 0; flat < out_count; ++flat) {
    int64_t in_flat = 0;
    for (size_t a = 0; a < rank; ++a) {
      const auto axis = static_cast<size_t>(axis_of[a]);
      if (axis >= rank) return std::nullopt;
      const int64_t at = first[a] + index[a] * step[a];
      if (at < 0 || at >= (*in_dims)[axis]) return std::nullopt;
      in_flat += at * in_stride[axis];
    }
    out.push_back((*info.contents)[static_cast<size_t>(in_flat)]);
    for (size_t a = rank; a-- > 0;) {
      if (++index[a] < out_dims[a]) break;
      index[a] = 0;
    }
  }
  return out;
}

std::optional<std::vector<Dim>> BroadcastContents(const TensorInfo& info,
                                                  const std::vector<int64_t>& out_dims) {
  if (!info.present || !info.contents) return std::nullopt;
  auto in_dims = ConstantDims(info.shape);
  if (!in_dims || in_dims->size() > out_dims.size()) return std::nullopt;
  int64_t out_count = 1;
  for (int64_t d : out_dims) {
    auto product = CheckedMul(out_count, d);
    if (d < 0 || !product || *product > kMaxFoldedElements) return std::nullopt;
    out_count = *product;
  }
  auto in_count = FoldableElementCount(info.shape);
  if (!in_count || static_cast<int64_t>(info.contents->size()) != *in_count) return std::nullopt;

  // Right-align the input's dims against the output's; a size-1 input dim repeats its element.
  const size_t offset = out_dims.size() - in_dims->size();
  for (size_t i = 0; i < in_dims->size(); ++i) {
    int64_t in = (*in_dims)[i];
    if (in != 1 && in != out_dims[offset + i]) return std::nullopt;
  }
  std::vector<Dim> out;
  out.reserve(static_cast<size_t>(out_count));
  std::vector<int64_t> index(out_dims.size(), 0);
  for (int64_t flat = 0; flat < out_count; ++flat) {
    int64_t in_flat = 0;
    for (size_t i = 0; i < in_dims->size(); ++i) {
      int64_t in = (*in_dims)[i];
      in_flat = in_flat * in + (in == 1 ? 0 : index[offset + i]);
    }
    out.push_back((*info.contents)[static_cast<size_t>(in_flat)]);
    // Advance the row-major multi-index.
    for (size_t k = out_dims.size(); k-- > 0;) {
      if (++index[k] < out_dims[k]) break;
      index[k] = 0;
    }
  }
  return out;
}

std::optional<bool> DimsEqual(const Dim& a, const Dim& b) {
  if (a.overflowed() || b.overflowed()) return std::nullopt;
  if (a == b) return true;
  Dim diff = a - b;
  if (diff.is_constant()) return false;  // e.g. seq vs seq + 1
  // A symbolic polynomial with positive coefficients is >= 1, so it never equals a constant <= 0
  // (PyTorch's `shape == -1` tests in expand/reshape sub-graphs).
  auto ca = a.constant_value();
  auto cb = b.constant_value();
  if (ca && *ca <= 0 && AllCoefficientsPositive(b)) return false;
  if (cb && *cb <= 0 && AllCoefficientsPositive(a)) return false;
  return std::nullopt;
}

std::optional<bool> DimLess(const Dim& a, const Dim& b) {
  if (a.overflowed() || b.overflowed()) return std::nullopt;
  auto ca = a.constant_value();
  auto cb = b.constant_value();
  if (ca && cb) return *ca < *cb;
  Dim diff = b - a;  // a < b  <=>  b - a >= 1
  if (auto c = diff.constant_value()) return *c >= 1;
  // b - a a positive polynomial with a non-negative constant part: b - a >= 1.
  if (AllCoefficientsPositive(diff)) return true;
  if (AllCoefficientsPositive(a - b)) return false;  // a - b >= 1
  return std::nullopt;
}

std::optional<std::vector<Dim>> FreshContents(const OpContext& ctx, const TensorInfo& a,
                                              const TensorInfo& b, const char* prefix) {
  if (ctx.symbols == nullptr || !a.contents || !b.contents || a.contents->empty() ||
      b.contents->empty())
    return std::nullopt;
  const size_t na = a.contents->size();
  const size_t nb = b.contents->size();
  if (na != nb && na != 1 && nb != 1) return std::nullopt;
  std::vector<Dim> out;
  for (size_t i = 0; i < std::max(na, nb); ++i)
    out.push_back(Dim::Symbol(ctx.symbols->Fresh(prefix)));
  return out;
}

}  // namespace memplan
