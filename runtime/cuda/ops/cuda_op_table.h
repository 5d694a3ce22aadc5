#pragma once
// The CUDA forward/backward implementations of the op registry's entries. Like the CPU kernel
// registry (runtime/cpu/kernel_registry.h) it only says how to compute, and is keyed by the
// registry entry; what an op saves and which inputs get gradients comes from the program. An op
// missing here is reported by the backend as unsupported, never approximated; tests/cuda/
// cuda_coverage_test.cc lists the registry ops that have none.

#include <functional>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "graph/expected.h"
#include "graph/ops/op_schema.h"
#include "runtime/backend.h"
#include "runtime/cuda/cuda_context.h"

namespace memplan::cuda {

// std::function, so a family registers one implementation per op with the value it dispatches on
// bound in (BinaryOp::kAdd for Add): an implementation never re-reads the op's name.
using CudaForwardFn =
    std::function<Expected<std::vector<DeviceTensor>>(CudaContext&, const ForwardCall&)>;
using CudaBackwardFn = std::function<Status(CudaContext&, const BackwardCall&)>;

struct CudaOp {
  CudaForwardFn forward;
  CudaBackwardFn backward;  // empty: no differentiable input
};

// nullptr when the CUDA backend has no implementation of the registry entry.
const CudaOp* FindCudaOp(const OpSchema& op);
// FindCudaOp of the registry entry of `op_type` (ai.onnx domain); nullptr when there is none.
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
  // REQUIRES: the op registry has an entry for `op_type` (ai.onnx), and it has no op here yet.
  void Register(std::string_view op_type, CudaForwardFn forward, CudaBackwardFn backward);
  const CudaOp* Find(const OpSchema& op) const;
  std::vector<std::string> OpTypes() const;

 private:
  std::map<const OpSchema*, CudaOp> entries_;
};

}  // namespace memplan::cuda
