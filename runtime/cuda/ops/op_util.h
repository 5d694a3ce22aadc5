#pragma once
// Small helpers shared by the CUDA op implementations (runtime/cuda/ops/*.cc).

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "graph/expected.h"
#include "runtime/backend.h"
#include "runtime/cuda/cuda_context.h"

namespace memplan::cuda {

// "the cuda backend does not support <op>: <why>".
Error Unsupported(std::string_view op, const std::string& why);

// The tensor forward output `j` is written to: the program's buffer (read with `shape`) when the
// call gives one, else fresh scratch of `dtype`. Errors: the buffer's size does not fit.
Expected<DeviceTensor> ForwardOutput(CudaContext& ctx, const ForwardCall& call, size_t j,
                                     const TensorShape& shape, DType dtype);
// The dtype output `j` is produced in: its buffer's when given, else `fallback`.
DType OutputDType(const ForwardCall& call, size_t j, DType fallback);

// Forward output `j` = fp32 `values` computed by a kernel (helper for the common shape: compute
// into WriteF32 of ForwardOutput, commit).
struct ForwardTarget {
  DeviceTensor tensor;
  F32Output out;
};
Expected<ForwardTarget> PrepareOutput(CudaContext& ctx, const ForwardCall& call, size_t j,
                                      const TensorShape& shape, DType dtype);

// Destination of input gradient `i` (undefined F32Output when not wanted).
Expected<F32Output> GradientTarget(CudaContext& ctx, const BackwardCall& call, size_t i);
bool WantsGradient(const BackwardCall& call, size_t i);
// Backward with no incoming gradient: written gradients become zero, accumulated ones stay.
Status ZeroGradients(CudaContext& ctx, const BackwardCall& call);

// Integer values of a constant input (shapes, axes, perms). Errors: not a constant.
Expected<std::vector<int64_t>> ConstantInts(const DeviceTensor& t, std::string_view op,
                                            std::string_view what);
// An axis in [-rank, rank) as [0, rank).
Expected<int64_t> NormalizeAxis(int64_t axis, size_t rank, std::string_view op);

}  // namespace memplan::cuda
