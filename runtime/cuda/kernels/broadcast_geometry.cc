// Host-side broadcasting rules for the elementwise kernels (plain C++, no device code).

#include "runtime/cuda/kernels/broadcast_geometry.h"

#include <algorithm>
#include <string>

namespace memplan::cuda {
namespace {

std::string ShapeText(const Shape& shape) {
  std::string text = "[";
  for (size_t i = 0; i < shape.size(); ++i) {
    if (i > 0) text += ", ";
    text += std::to_string(shape[i]);
  }
  return text + "]";
}

}  // namespace

Expected<Shape> BroadcastShapes(const Shape& a, const Shape& b) {
  const size_t rank = std::max(a.size(), b.size());
  if (rank > static_cast<size_t>(kMaxRank)) {
    return MakeError("CUDA elementwise kernels support rank up to " + std::to_string(kMaxRank) +
                     ", got " + std::to_string(rank));
  }
  Shape out(rank, 1);
  for (size_t i = 0; i < rank; ++i) {
    const int64_t da = i < rank - a.size() ? 1 : a[i - (rank - a.size())];
    const int64_t db = i < rank - b.size() ? 1 : b[i - (rank - b.size())];
    if (da != db && da != 1 && db != 1) {
      return MakeError("shapes " + ShapeText(a) + " and " + ShapeText(b) + " do not broadcast");
    }
    out[i] = da == 1 ? db : da;
  }
  return out;
}

BroadcastGeometry MakeBroadcastGeometry(const Shape& a, const Shape& b, const Shape& out) {
  BroadcastGeometry g;
  g.rank = static_cast<int>(out.size());
  int64_t a_stride = 1;
  int64_t b_stride = 1;
  for (int axis = g.rank - 1; axis >= 0; --axis) {
    g.out_dims[axis] = out[static_cast<size_t>(axis)];
    const int a_axis = axis - (g.rank - static_cast<int>(a.size()));
    const int b_axis = axis - (g.rank - static_cast<int>(b.size()));
    const int64_t da = a_axis >= 0 ? a[static_cast<size_t>(a_axis)] : 1;
    const int64_t db = b_axis >= 0 ? b[static_cast<size_t>(b_axis)] : 1;
    g.a_strides[axis] = da == 1 ? 0 : a_stride;
    g.b_strides[axis] = db == 1 ? 0 : b_stride;
    a_stride *= da;
    b_stride *= db;
  }
  return g;
}

}  // namespace memplan::cuda
