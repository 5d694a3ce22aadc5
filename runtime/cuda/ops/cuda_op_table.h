#pragma once
// ONNX op type -> CUDA forward/backward implementations. Like the CPU kernel registry
// (runtime/cpu/kernel_registry.h) it only says how to compute; what an op saves and which inputs
// get gradients comes from the program. An op missing here is reported by the backend as
// unsupported, never approximated.

#include <string>
#include <string_view>
#include <vector>

#include "graph/expected.h"
#include "runtime/backend.h"
#include "runtime/cuda/cuda_context.h"

namespace memplan::cuda {

using CudaForwardFn = Expected<std::vector<DeviceTensor>> (*)(CudaContext&, const ForwardCall&);
using CudaBackwardFn = Status (*)(CudaContext&, const BackwardCall&);

struct CudaOp {
  CudaForwardFn forward = nullptr;
  CudaBackwardFn backward = nullptr;  // null: no differentiable input
};

// nullptr when the CUDA backend has no implementation of `op_type` (ai.onnx domain).
const CudaOp* FindCudaOp(std::string_view op_type);
// Every op type the table knows, sorted (for messages and docs).
std::vector<std::string> CudaOpTypes();

// Each family file registers its ops (explicit calls: a static library drops static
// registrars).
class CudaOpTable;
void RegisterElementwiseOps(CudaOpTable& table);    // ops_elementwise.cc
void RegisterMatMulOps(CudaOpTable& table);         // ops_matmul.cc
void RegisterLayoutOps(CudaOpTable& table);         // ops_layout.cc
void RegisterNormalizationOps(CudaOpTable& table);  // ops_normalization.cc
void RegisterConvPoolOps(CudaOpTable& table);       // ops_conv_pool.cc
void RegisterGatherDropoutOps(CudaOpTable& table);  // ops_gather_dropout.cc

class CudaOpTable {
 public:
  void Register(std::string op_type, CudaForwardFn forward, CudaBackwardFn backward);
  const CudaOp* Find(std::string_view op_type) const;
  std::vector<std::string> OpTypes() const;

 private:
  std::vector<std::pair<std::string, CudaOp>> entries_;
};

}  // namespace memplan::cuda
