#include "runtime/cuda/ops/cuda_op_table.h"

#include <algorithm>
#include <utility>

#include "graph/ops/op_registry.h"

namespace memplan::cuda {
namespace {

const CudaOpTable& Table() {
  static const CudaOpTable table = [] {
    CudaOpTable t;
    RegisterElementwiseOps(t);
    RegisterMatMulOps(t);
    RegisterLayoutOps(t);
    RegisterNormalizationOps(t);
    RegisterConvPoolOps(t);
    RegisterGatherDropoutOps(t);
    return t;
  }();
  return table;
}

}  // namespace

void CudaOpTable::Register(std::string_view op_type, CudaForwardFn forward,
                           CudaBackwardFn backward) {
  const OpSchema* op = OpRegistry::Get().Find(op_type);
  MEMPLAN_CHECK(op != nullptr) << "a CUDA kernel for " << op_type << ", which the registry lacks";
  const bool inserted =
      entries_.emplace(op, CudaOp{std::move(forward), std::move(backward)}).second;
  MEMPLAN_CHECK(inserted) << "two CUDA kernels for " << op_type;
}

const CudaOp* CudaOpTable::Find(const OpSchema& op) const {
  auto it = entries_.find(&op);
  return it == entries_.end() ? nullptr : &it->second;
}

std::vector<std::string> CudaOpTable::OpTypes() const {
  std::vector<std::string> names;
  for (const auto& entry : entries_) names.push_back(entry.first->op_type);
  std::sort(names.begin(), names.end());
  return names;
}

const CudaOp* FindCudaOp(const OpSchema& op) { return Table().Find(op); }

const CudaOp* FindCudaOp(std::string_view op_type) {
  const OpSchema* op = OpRegistry::Get().Find(op_type);
  return op == nullptr ? nullptr : Table().Find(*op);
}

std::vector<std::string> CudaOpTypes() { return Table().OpTypes(); }

}  // namespace memplan::cuda
