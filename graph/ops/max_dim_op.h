#pragma once
// torch.max(x, dim) as one op: memplan:MaxDim(x) -> (values, indices). ONNX has no max.dim;
// exporters write ReduceMax over one axis (and ArgMax beside it when the indices are used), the
// same ReduceMax torch.amax exports. The two differ in what autograd keeps: amax saves self and
// result (scale_grad_by_count), max.dim only its int64 indices
// (value_selecting_reduction_backward). The import fusion (graph/fusion/max_dim.cc) writes the
// max.dim form back, the registry (graph/ops/reduction_ops.cc) and the CPU kernel
// (runtime/cpu/kernels/reduction.cc) read one node.
//
// Attributes as ReduceMax's: `axes` (one axis) and `keepdims`. Output 1, the indices, is optional
// (absent when nothing read the ArgMax); backward then reads them as the extra kIndices.
//
// This header names the op and its saved extra once for all three.

namespace memplan::max_dim {

inline constexpr const char* kDomain = "memplan";
inline constexpr const char* kOpType = "MaxDim";
inline constexpr const char* kIndices = "indices";  // int64, the values' shape

}  // namespace memplan::max_dim
