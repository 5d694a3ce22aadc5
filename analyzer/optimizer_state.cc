#include "analyzer/optimizer_state.h"

namespace memplan {

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
  }
  return {};
}

}  // namespace memplan
