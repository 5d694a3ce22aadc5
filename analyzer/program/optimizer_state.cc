#include "analyzer/program/optimizer_state.h"

#include <optional>

namespace memplan {
namespace {

std::vector<OptimizerStateSpec> EightBitStates(const Shape& param_shape) {
  std::optional<int64_t> n = param_shape.NumElements().constant_value();
  MEMPLAN_CHECK(n.has_value()) << "a parameter shape is constant";
  if (*n < kEightBitMinElements) return {{"state1", param_shape}, {"state2", param_shape}};
  const Shape blocks{{Dim((*n + kEightBitStateBlock - 1) / kEightBitStateBlock)}};
  return {{"state1", param_shape, DType::kUInt8},
          {"state2", param_shape, DType::kUInt8},
          {"absmax1", blocks},
          {"absmax2", blocks}};
}

}  // namespace

std::vector<OptimizerStateSpec> OptimizerStates(OptimizerKind optimizer, const Shape& param_shape) {
  switch (optimizer) {
    case OptimizerKind::kSgd:
      return {};
    case OptimizerKind::kMomentum:
      return {{"momentum_buffer", param_shape}};
    case OptimizerKind::kAdam:
    case OptimizerKind::kAdamW:
      return {{"exp_avg", param_shape}, {"exp_avg_sq", param_shape}};
    case OptimizerKind::kAdafactor: {
      const auto& d = param_shape.dims;
      if (d.size() < 2) return {{"exp_avg_sq", param_shape}};
      Shape row{std::vector<Dim>(d.begin(), d.end() - 1)};
      Shape col{std::vector<Dim>(d.begin(), d.end() - 2)};
      col.dims.push_back(d.back());
      return {{"exp_avg_sq_row", row}, {"exp_avg_sq_col", col}};
    }
    case OptimizerKind::kAdamW8bit:
    case OptimizerKind::kPagedAdamW8bit:
      return EightBitStates(param_shape);
    case OptimizerKind::kLion:
      return {{"exp_avg", param_shape}};
  }
  return {};
}

}  // namespace memplan
