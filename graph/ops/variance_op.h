#pragma once
// torch.var(x, dim, correction=0) as one op: memplan:Variance(x) = mean((x - mean(x))^2). ONNX
// has no variance; exporters write ReduceMean(keepdims=1), Sub, Mul(d, d), ReduceMean (and, for
// a correction, a Mul and Div by constants after it, left as they are), which read node by node
// keeps the centred copy d; torch's var_backward keeps only self. The import fusion
// (graph/fusion/variance.cc) writes it back; the registry (graph/ops/reduction_ops.cc) and the
// CPU kernel (runtime/cpu/kernels/reduction.cc) read one node. std is Sqrt(var) in every export,
// and torch's std_backward keeps self and result: Variance (self) and Sqrt (its result) keep the
// same two tensors, so std needs no op of its own.
//
// Attributes as ReduceMean's: `axes` (ints) and `keepdims` (int, default 1).

namespace memplan::variance {

inline constexpr const char* kDomain = "memplan";
inline constexpr const char* kOpType = "Variance";

}  // namespace memplan::variance
