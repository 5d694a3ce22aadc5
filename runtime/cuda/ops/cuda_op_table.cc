#include "runtime/cuda/ops/cuda_op_table.h"

#include <algorithm>

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

void CudaOpTable::Register(std::string op_type, CudaForwardFn forward, CudaBackwardFn backward) {
  MEMPLAN_CHECK(Find(op_type) == nullptr);
  entries_.emplace_back(std::move(op_type), CudaOp{forward, backward});
}

const CudaOp* CudaOpTable::Find(std::string_view op_type) const {
  for (const auto& [name, op] : entries_)
    if (name == op_type) return &op;
  return nullptr;
}

std::vector<std::string> CudaOpTable::OpTypes() const {
  std::vector<std::string> names;
  for (const auto& entry : entries_) names.push_back(entry.first);
  std::sort(names.begin(), names.end());
  return names;
}

const CudaOp* FindCudaOp(std::string_view op_type) { return Table().Find(op_type); }
std::vector<std::string> CudaOpTypes() { return Table().OpTypes(); }

}  // namespace memplan::cuda
