#pragma once
// Which dtypes hold integers: shape folding computes on them exactly and the CPU backend rounds
// values stored in them by truncation. Kept out of graph/dtype.h so the few users pay for it.

#include "graph/dtype.h"

namespace memplan {

// True for int8 to int64 and uint8 to uint64 (not bool, not the packed 4-bit integers): the
// dtypes whose values follow integer arithmetic.
inline bool IsInteger(DType dtype) {
  switch (dtype) {
    case DType::kInt8:
    case DType::kUInt8:
    case DType::kInt16:
    case DType::kUInt16:
    case DType::kInt32:
    case DType::kUInt32:
    case DType::kInt64:
    case DType::kUInt64:
      return true;
    default:
      return false;
  }
}

}  // namespace memplan
