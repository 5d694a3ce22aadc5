#include "graph/ops/geometry/broadcast.h"

#include <algorithm>

namespace memplan {
namespace {

// Dim `i` of `dims` seen right-aligned in `rank` dims (1 where it is missing).
template <class D>
const D* Aligned(const std::vector<D>& dims, size_t rank, size_t i) {
  return i < rank - dims.size() ? nullptr : &dims[i - (rank - dims.size())];
}

}  // namespace

Expected<Shape> BroadcastShapes(const Shape& a, const Shape& b) {
  if (!a.known || !b.known) return Shape::Unknown();
  const size_t rank = std::max(a.rank(), b.rank());
  Shape out;
  out.dims.resize(rank);
  for (size_t i = 0; i < rank; ++i) {
    const Dim* da = Aligned(a.dims, rank, i);
    const Dim* db = Aligned(b.dims, rank, i);
    if (!da) {
      out.dims[i] = *db;
    } else if (!db) {
      out.dims[i] = *da;
    } else if (*da == *db) {
      out.dims[i] = *da;
    } else if (da->constant_value() == 1) {
      out.dims[i] = *db;
    } else if (db->constant_value() == 1) {
      out.dims[i] = *da;
    } else if (da->is_constant() && db->is_constant()) {
      return MakeError("cannot broadcast dims " + std::to_string(*da->constant_value()) + " and " +
                       std::to_string(*db->constant_value()));
    } else if (da->is_constant()) {
      out.dims[i] = *da;
    } else {
      out.dims[i] = *db;
    }
  }
  return out;
}

Expected<std::vector<int64_t>> BroadcastDims(const std::vector<int64_t>& a,
                                             const std::vector<int64_t>& b) {
  const size_t rank = std::max(a.size(), b.size());
  std::vector<int64_t> out(rank, 1);
  for (size_t i = 0; i < rank; ++i) {
    const int64_t* pa = Aligned(a, rank, i);
    const int64_t* pb = Aligned(b, rank, i);
    const int64_t da = pa ? *pa : 1;
    const int64_t db = pb ? *pb : 1;
    if (da != db && da != 1 && db != 1) {
      return MakeError("shapes " + DimsToString(a) + " and " + DimsToString(b) +
                       " do not broadcast");
    }
    out[i] = da == 1 ? db : da;
  }
  return out;
}

std::vector<int64_t> BroadcastStrides(const std::vector<int64_t>& shape,
                                      const std::vector<int64_t>& out) {
  MEMPLAN_CHECK(shape.size() <= out.size());
  const size_t lead = out.size() - shape.size();
  std::vector<int64_t> strides(out.size(), 0);
  int64_t own = 1;  // row-major stride of shape's dim i
  for (size_t i = shape.size(); i-- > 0;) {
    MEMPLAN_CHECK(shape[i] == out[lead + i] || shape[i] == 1);
    strides[lead + i] = shape[i] == 1 ? 0 : own;
    own *= shape[i];
  }
  return strides;
}

std::string DimsToString(const std::vector<int64_t>& dims) {
  std::string text = "[";
  for (size_t i = 0; i < dims.size(); ++i) {
    if (i > 0) text += ", ";
    text += std::to_string(dims[i]);
  }
  return text + "]";
}

}  // namespace memplan
